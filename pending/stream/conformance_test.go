package stream

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/store/chaintypes"
)

// The messages of the streams tipnode follows, written from their
// specifications' field lists (not captured): OP subblocks
// (ethereum-optimism/specs, specs/protocol/subblocks.md: the flashblocks
// wire shape with state_root, block_hash and withdrawals_root zero and
// withdrawals empty; blob_gas_used the cumulative DA footprint; Lagoon's
// post_exec_tx), op-rbuilder's serialization (the builder behind
// rollup-boost on Unichain, X Layer and Conduit- and Gelato-hosted OP
// chains: quantities as alloy's hex quantities, so base.block_number,
// gas_limit and timestamp are hex strings, metadata.block_number a JSON
// number; metadata with receipts and new_account_balances, or trimmed to
// the block number and an access list), and rollup-boost's websocket proxy
// (the same JSON, brotli-compressed, in binary frames). The real Base
// mainnet messages of testdata are checked in realmsg_test.go.

// conformanceDeposit is an L1-info-like deposit (0x7e) as index 0 carries
// it.
func conformanceDeposit(t *testing.T) string {
	t.Helper()
	to := common.HexToAddress("0x4200000000000000000000000000000000000015")
	d := chaintypes.NewDeposit(chaintypes.DepositFields{SourceHash: common.HexToHash("0x5a"), From: common.HexToAddress("0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001"),
		To: &to, Gas: 1_000_000, Data: common.FromHex("0x098999be00000558000c5fc5")})
	raw, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(raw)
}

const zero32 = "0x0000000000000000000000000000000000000000000000000000000000000000"

// subblock writes one message: index 0 with the base when base is true,
// the diff's transactions, then extra diff fields and the metadata object
// (empty: no metadata key at all).
func subblock(index uint64, base bool, txs []string, diffExtra, metadata string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"payload_id":"0x03a1b2c3d4e5f601","index":%d,`, index)
	if base {
		b.WriteString(`"base":{"parent_beacon_block_root":"0x9f3c8e0b3a7d4e1c2b5a6f7e8d9c0b1a2f3e4d5c6b7a8f9e0d1c2b3a4f5e6d7c",` +
			`"parent_hash":"0x6b1e9b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f90",` +
			`"fee_recipient":"0x4200000000000000000000000000000000000011",` +
			`"prev_randao":"0x1d2c3b4a59687766554433221100ffeeddccbbaa99887766554433221100ffee",` +
			`"block_number":"0x8c4a1f0","gas_limit":"0x2625a00","timestamp":"0x6925c0d4",` +
			`"extra_data":"0x010000003200000006000000000000c350","base_fee_per_gas":"0xf4240"},`)
	}
	quoted := make([]string, len(txs))
	for i, tx := range txs {
		quoted[i] = `"` + tx + `"`
	}
	fmt.Fprintf(&b, `"diff":{"state_root":"%s","receipts_root":"0x2a6c6b9d1e0f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b",`+
		`"logs_bloom":"0x%s","gas_used":"0xb3a3","block_hash":"%s","transactions":[%s],"withdrawals":[],"withdrawals_root":"%s"%s}`,
		zero32, strings.Repeat("00", 256), zero32, strings.Join(quoted, ","), zero32, diffExtra)
	if metadata != "" {
		b.WriteString(`,"metadata":` + metadata)
	}
	b.WriteString("}")
	return b.String()
}

// TestStreamConformance decodes each producer's message shape and checks
// what the replica reads of it.
func TestStreamConformance(t *testing.T) {
	dep := conformanceDeposit(t)
	_, raw := testTxs(t)
	user := raw[0].String()
	const number = 0x8c4a1f0
	fullMeta := fmt.Sprintf(`{"block_number":%d,"new_account_balances":{"0x4200000000000000000000000000000000000011":"0x1bc16d674ec80000"},`+
		`"receipts":{"0x2f1e5a0b7c3d4e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f":{"type":"0x7e","status":"0x1","cumulativeGasUsed":"0xb3a3","logs":[],"depositNonce":"0x2a","depositReceiptVersion":"0x1"}}}`, number)
	for _, tc := range []struct {
		name      string
		frame     int
		data      []byte
		index     uint64
		txs       int
		blobGas   *uint64
		postExec  bool
		absent    bool
		receipts  bool
		balances  bool
		wantBase  bool
		wantNumer uint64
	}{
		{
			name: "OP subblocks index 0: deposits, zero roots, DA footprint, full metadata", frame: websocket.TextMessage,
			data:  []byte(subblock(0, true, []string{dep}, `,"blob_gas_used":"0x186a0"`, fullMeta)),
			index: 0, txs: 1, blobGas: ptr(100_000), receipts: true, balances: true, wantBase: true,
		},
		{
			name: "OP subblocks index 3: mempool transactions, no blob_gas_used", frame: websocket.TextMessage,
			data:  []byte(subblock(3, false, []string{user}, ``, fmt.Sprintf(`{"block_number":%d,"new_account_balances":{},"receipts":{}}`, number))),
			index: 3, txs: 1, receipts: true, balances: true,
		},
		{
			name: "OP subblocks (Lagoon): diff.post_exec_tx", frame: websocket.TextMessage,
			data:  []byte(subblock(5, false, []string{}, `,"blob_gas_used":"0x30d40","post_exec_tx":"0x7df85a01"`, fmt.Sprintf(`{"block_number":%d}`, number))),
			index: 5, txs: 0, blobGas: ptr(200_000), postExec: true,
		},
		{
			name: "op-rbuilder trimmed metadata: block number and a null access list", frame: websocket.TextMessage,
			data:  []byte(subblock(1, false, []string{user}, ``, fmt.Sprintf(`{"block_number":%d,"access_list":null}`, number))),
			index: 1, txs: 1,
		},
		{
			name: "op-rbuilder metadata with an access list, without receipts", frame: websocket.TextMessage,
			data: []byte(subblock(2, false, []string{user}, ``, fmt.Sprintf(`{"block_number":%d,"new_account_balances":{},`+
				`"access_list":{"min_tx_index":0,"max_tx_index":1,"account_changes":[]}}`, number))),
			index: 2, txs: 1, balances: true,
		},
		{
			name: "metadata without new_account_balances", frame: websocket.TextMessage,
			data:  []byte(subblock(2, false, []string{user}, ``, fmt.Sprintf(`{"block_number":%d,"receipts":{}}`, number))),
			index: 2, txs: 1, receipts: true,
		},
		{
			name: "metadata absent, index 0: the block number is the base's", frame: websocket.TextMessage,
			data:  []byte(subblock(0, true, []string{dep}, ``, "")),
			index: 0, txs: 1, absent: true, wantBase: true,
		},
		{
			name: "metadata absent, later index: the block is the payload id's", frame: websocket.TextMessage,
			data:  []byte(subblock(4, false, []string{user}, ``, "")),
			index: 4, txs: 1, absent: true, wantNumer: 0,
		},
		{
			name: "rollup-boost websocket proxy: brotli in a binary frame", frame: websocket.BinaryMessage,
			data:  compress(t, []byte(subblock(0, true, []string{dep}, `,"blob_gas_used":"0x186a0"`, fullMeta))),
			index: 0, txs: 1, blobGas: ptr(100_000), receipts: true, balances: true, wantBase: true,
		},
		{
			name: "uncompressed JSON in a binary frame", frame: websocket.BinaryMessage,
			data:  []byte(subblock(3, false, []string{user}, ``, fmt.Sprintf(`{"block_number":%d}`, number))),
			index: 3, txs: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decode(tc.frame, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if p.Index != tc.index || len(p.Diff.Transactions) != tc.txs {
				t.Fatalf("index %d with %d transactions, want %d with %d", p.Index, len(p.Diff.Transactions), tc.index, tc.txs)
			}
			if _, err := p.Txs(); err != nil {
				t.Fatal(err)
			}
			if p.Diff.StateRoot != (common.Hash{}) || p.Diff.BlockHash != (common.Hash{}) || p.Diff.WithdrawalsRoot != (common.Hash{}) ||
				p.Diff.Withdrawals == nil || len(p.Diff.Withdrawals) != 0 {
				t.Fatalf("zero-valued fields: %+v", p.Diff)
			}
			if p.Diff.GasUsed != 0xb3a3 {
				t.Fatalf("gas used %d", p.Diff.GasUsed)
			}
			switch {
			case tc.blobGas == nil && p.Diff.BlobGasUsed != nil, tc.blobGas != nil && (p.Diff.BlobGasUsed == nil || uint64(*p.Diff.BlobGasUsed) != *tc.blobGas):
				t.Fatalf("blob_gas_used %v, want %v", p.Diff.BlobGasUsed, tc.blobGas)
			case tc.postExec != (len(p.Diff.PostExecTx) > 0):
				t.Fatalf("post_exec_tx %x", p.Diff.PostExecTx)
			case tc.postExec && p.Diff.PostExecTx[0] != 0x7d:
				t.Fatalf("post_exec_tx %x, want the 0x7D transaction", p.Diff.PostExecTx)
			case p.Metadata.Absent != tc.absent:
				t.Fatalf("metadata absent %v", p.Metadata.Absent)
			case (p.Metadata.Receipts != nil) != tc.receipts, (p.Metadata.NewAccountBalances != nil) != tc.balances:
				t.Fatalf("metadata receipts %s balances %s", p.Metadata.Receipts, p.Metadata.NewAccountBalances)
			}
			want := uint64(number)
			if tc.absent && !tc.wantBase {
				want = tc.wantNumer
			}
			if p.Metadata.BlockNumber != want {
				t.Fatalf("block number %d, want %d", p.Metadata.BlockNumber, want)
			}
			if tc.wantBase {
				b := p.Base
				if b == nil || uint64(b.BlockNumber) != number || b.GasLimit != 40_000_000 || b.Timestamp != 0x6925c0d4 ||
					b.BaseFeePerGas.ToInt().Cmp(big.NewInt(1_000_000)) != 0 || len(b.ExtraData) != 17 {
					t.Fatalf("base %+v", b)
				}
			}
			if tc.receipts && len(p.Metadata.Receipts) > 2 {
				rs, err := p.Metadata.ParseReceipts()
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					if r.Type != 0x7e || *r.DepositNonce != 42 {
						t.Fatalf("receipt %+v", r)
					}
				}
			}
		})
	}
}

// TestStreamConformanceRefuses: what the subblocks specification makes
// invalid is refused with the sentinel that names it.
func TestStreamConformanceRefuses(t *testing.T) {
	_, raw := testTxs(t)
	user := raw[0].String()
	for _, tc := range []struct {
		name string
		data string
		want error
	}{
		{"withdrawals not empty", strings.Replace(subblock(1, false, []string{user}, ``, `{"block_number":7}`), `"withdrawals":[]`,
			`"withdrawals":[{"index":"0x1","validatorIndex":"0x2","address":"0x0000000000000000000000000000000000000003","amount":"0x4"}]`, 1), ErrInconsistent},
		{"metadata.block_number as a hex string", subblock(1, false, []string{user}, ``, `{"block_number":"0x7"}`), ErrMalformed},
		{"base.block_number as a JSON number", strings.Replace(subblock(0, true, nil, ``, `{"block_number":147104240}`), `"block_number":"0x8c4a1f0"`, `"block_number":147104240`, 1), ErrMalformed},
		{"base and metadata disagree", subblock(0, true, nil, ``, `{"block_number":7}`), ErrInconsistent},
		{"base on a later index", subblock(1, true, nil, ``, ""), ErrInconsistent},
		{"metadata without block_number", subblock(1, false, nil, ``, `{"receipts":{}}`), ErrMissingField},
		{"post_exec_tx not hex", subblock(1, false, nil, `,"post_exec_tx":7`, `{"block_number":7}`), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(websocket.TextMessage, []byte(tc.data)); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func ptr(v uint64) *uint64 { return &v }
