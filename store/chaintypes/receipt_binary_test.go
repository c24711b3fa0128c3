package chaintypes

import (
	"bytes"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// TestDepositReceiptMarshalBinary: a deposit receipt's binary encoding
// (debug_getRawReceipts) is op-geth's: 0x7e ‖ RLP([status, cumulativeGas,
// bloom, logs, depositNonce?, depositReceiptVersion?]) with the nonce
// whenever set (Regolith) and the version whenever set (Canyon), decoded
// here by go-ethereum's RLP decoder into optional fields. The consensus
// encoding (EncodeIndex) leaves a pre-Canyon nonce out; from Canyon both
// agree. Other receipts keep go-ethereum's encoding.
func TestDepositReceiptMarshalBinary(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	type decoded struct {
		Status            []byte
		CumulativeGasUsed uint64
		Bloom             types.Bloom
		Logs              []*types.Log
		DepositNonce      *uint64 `rlp:"optional"`
		Version           *uint64 `rlp:"optional"`
	}
	for _, c := range []struct {
		name            string
		op              *OPReceipt
		nonce, version  *uint64
		sameAsConsensus bool
	}{
		{"bedrock", nil, nil, nil, true},
		{"regolith", &OPReceipt{DepositNonce: u(300)}, u(300), nil, false},
		{"canyon", &OPReceipt{DepositNonce: u(5), DepositReceiptVersion: u(1)}, u(5), u(1), true},
	} {
		r := &Receipt{Receipt: types.Receipt{Type: DepositTxType, Status: 1, CumulativeGasUsed: 46_000, Logs: []*types.Log{}}, OP: c.op}
		bin, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if bin[0] != DepositTxType {
			t.Fatalf("%s: type byte %x", c.name, bin[0])
		}
		var d decoded
		if err := rlp.DecodeBytes(bin[1:], &d); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d.CumulativeGasUsed != 46_000 || !bytes.Equal(d.Status, []byte{1}) || (d.DepositNonce == nil) != (c.nonce == nil) ||
			(c.nonce != nil && *d.DepositNonce != *c.nonce) || (d.Version == nil) != (c.version == nil) || (c.version != nil && *d.Version != *c.version) {
			t.Fatalf("%s: decoded %+v", c.name, d)
		}
		var cons bytes.Buffer
		Receipts{r}.EncodeIndex(0, &cons)
		if bytes.Equal(cons.Bytes(), bin) != c.sameAsConsensus {
			t.Fatalf("%s: consensus %x, binary %x", c.name, cons.Bytes(), bin)
		}
	}
	// A non-deposit receipt: go-ethereum's encoding.
	r := &Receipt{Receipt: types.Receipt{Type: types.DynamicFeeTxType, Status: 1, CumulativeGasUsed: 21_000, Logs: []*types.Log{}}}
	bin, _ := r.MarshalBinary()
	want, _ := r.Receipt.MarshalBinary()
	if !bytes.Equal(bin, want) {
		t.Fatalf("1559 receipt %x, go-ethereum's %x", bin, want)
	}
}
