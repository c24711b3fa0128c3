package op

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// TestUpgradeDepositSourceHash: the upgrade transactions' source hashes the
// Ecotone and Fjord specs list (ecotone/derivation.md, fjord/derivation.md).
func TestUpgradeDepositSourceHash(t *testing.T) {
	for intent, want := range map[string]string{
		"Ecotone: L1 Block Deployment":                    "0x877a6077205782ea15a6dc8699fa5ebcec5e0f4389f09cb8eda09488231346f8",
		"Ecotone: Gas Price Oracle Deployment":            "0xa312b4510adf943510f05fcc8f15f86995a5066bd83ce11384688ae20e6ecf42",
		"Ecotone: L1 Block Proxy Update":                  "0x18acb38c5ff1c238a7460ebc1b421fa49ec4874bdf1e0a530d234104e5e67dbc",
		"Ecotone: Gas Price Oracle Proxy Update":          "0xee4f9385eceef498af0be7ec5862229f426dec41c8d42397c7257a5117d9230a",
		"Ecotone: Gas Price Oracle Set Ecotone":           "0x0c1cb38e99dbc9cbfab3bb80863380b0905290b37eb3d6ab18dc01c1f3e75f93",
		"Ecotone: beacon block roots contract deployment": "0x69b763c48478b9dc2f65ada09b3d92133ec592ea715ec65ad6e7f3dc519dc00c",
		"Fjord: Gas Price Oracle Deployment":              "0x86122c533fdcb89b16d8713174625e44578a89751d96c098ec19ab40a51a8ea3",
		"Fjord: Gas Price Oracle Proxy Update":            "0x1e6bb0c28bfab3dc9b36ffb0f721f00d6937f33577606325692db0965a7d58c6",
		"Fjord: Gas Price Oracle Set Fjord":               "0xbac7bb0d5961cad209a345408b0280a0d4686b1b20665e1b0f9cdafd73b19b6b",
	} {
		if got := UpgradeDepositSourceHash(intent); got != common.HexToHash(want) {
			t.Errorf("%q: %s, want %s", intent, got, want)
		}
	}
}

// TestL1InfoDepositSourceHash: the source hash of real L1-info deposits
// follows from the L1 block hash and sequence number they carry.
func TestL1InfoDepositSourceHash(t *testing.T) {
	for _, enc := range []string{opMainnetL1Info, baseL1Info} {
		b := hexutil.MustDecode(enc)
		var d depositFields
		if err := rlp.DecodeBytes(b[1:], &d); err != nil {
			t.Fatal(err)
		}
		info, err := ParseL1Info(d.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got := L1InfoDepositSourceHash(info.BlockHash, info.SequenceNumber); got != d.SourceHash {
			t.Errorf("source hash %s, deposit has %s", got, d.SourceHash)
		}
	}
	// And on the real OP Sepolia blocks, when present.
	if fx := loadKonaOptional(t); fx != nil {
		for n, f := range fx {
			var d depositFields
			if err := rlp.DecodeBytes(f.Payload.Transactions[0][1:], &d); err != nil {
				t.Fatal(err)
			}
			info, err := ParseL1Info(d.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got := L1InfoDepositSourceHash(info.BlockHash, info.SequenceNumber); got != d.SourceHash {
				t.Errorf("block %d: source hash %s, deposit has %s", n, got, d.SourceHash)
			}
		}
	}
}

func TestUserDepositSourceHash(t *testing.T) {
	l1 := common.HexToHash("0x1234")
	inner := crypto.Keccak256(l1[:], common.BigToHash(big.NewInt(3)).Bytes())
	want := crypto.Keccak256Hash(make([]byte, 32), inner)
	if got := UserDepositSourceHash(l1, 3); got != want {
		t.Errorf("user deposit: %s, want %s", got, want)
	}
	if UserDepositSourceHash(l1, 3) == L1InfoDepositSourceHash(l1, 3) {
		t.Error("domains do not separate user and L1-info deposits")
	}
}

func TestDepositRules(t *testing.T) {
	ten, twenty := uint64(10), uint64(20)
	cfg := &Config{BedrockBlock: new(big.Int), RegolithTime: &ten, CanyonTime: &twenty,
		EIP1559Elasticity: 6, EIP1559Denominator: 50, EIP1559DenominatorCanyon: 250}
	cases := []struct {
		t                 uint64
		nonce, version    bool
		consensus, sysTx  bool
		gasSys, gasNormal uint64 // gas used: system tx, normal success
		gasFailed         uint64
	}{
		{5, false, false, false, true, 0, 100_000, 100_000},
		{10, true, false, false, false, 30_000, 30_000, 100_000},
		{20, true, true, true, false, 30_000, 30_000, 100_000},
	}
	for _, c := range cases {
		n, v, cons := DepositReceiptFields(cfg, c.t, 42)
		if (n != nil) != c.nonce || (n != nil && *n != 42) || (v != nil) != c.version || (v != nil && *v != 1) || cons != c.consensus {
			t.Errorf("t=%d: nonce %v version %v consensus %v", c.t, n, v, cons)
		}
		if SystemTxAllowed(cfg, c.t) != c.sysTx {
			t.Errorf("t=%d: system tx allowed %v", c.t, !c.sysTx)
		}
		if g := DepositGasUsed(cfg, c.t, true, 100_000, 30_000, false); g != c.gasSys {
			t.Errorf("t=%d: system tx gas %d, want %d", c.t, g, c.gasSys)
		}
		if g := DepositGasUsed(cfg, c.t, false, 100_000, 30_000, false); g != c.gasNormal {
			t.Errorf("t=%d: gas %d, want %d", c.t, g, c.gasNormal)
		}
		if g := DepositGasUsed(cfg, c.t, false, 100_000, 30_000, true); g != c.gasFailed {
			t.Errorf("t=%d: failed gas %d, want %d", c.t, g, c.gasFailed)
		}
	}
}
