package op

import (
	"encoding/binary"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// DepositTxType is the EIP-2718 type of deposit transactions.
const DepositTxType = 0x7e

// Source-hash domains (deposits.md): the outer keccak hashes a domain word
// and the keccak of what identifies the deposit.
const (
	UserDepositSourceDomain    = 0
	L1InfoDepositSourceDomain  = 1
	UpgradeDepositSourceDomain = 2
)

// word is v as a big-endian uint256.
func word(v uint64) []byte {
	var w common.Hash
	binary.BigEndian.PutUint64(w[24:], v)
	return w[:]
}

func sourceHash(domain uint64, inner common.Hash) common.Hash {
	var d common.Hash
	d[31] = byte(domain)
	return crypto.Keccak256Hash(d[:], inner[:])
}

// UserDepositSourceHash is the sourceHash of a user deposit: the
// TransactionDeposited log at logIndex (in the whole L1 block) of L1 block
// l1BlockHash.
func UserDepositSourceHash(l1BlockHash common.Hash, logIndex uint64) common.Hash {
	return sourceHash(UserDepositSourceDomain, crypto.Keccak256Hash(l1BlockHash[:], word(logIndex)))
}

// L1InfoDepositSourceHash is the sourceHash of the L1-info deposit of the
// L2 block seqNumber blocks into the epoch of L1 block l1BlockHash.
func L1InfoDepositSourceHash(l1BlockHash common.Hash, seqNumber uint64) common.Hash {
	return sourceHash(L1InfoDepositSourceDomain, crypto.Keccak256Hash(l1BlockHash[:], word(seqNumber)))
}

// UpgradeDepositSourceHash is the sourceHash of a network-upgrade deposit
// identified by its intent string (e.g. "Ecotone: L1 Block Deployment").
func UpgradeDepositSourceHash(intent string) common.Hash {
	return sourceHash(UpgradeDepositSourceDomain, crypto.Keccak256Hash([]byte(intent)))
}

// DepositReceiptFields are the deposit-only receipt fields of a deposit run
// at time t whose sender had nonce nonceBefore before EVM processing:
//   - depositNonce: from Regolith (nil before); API responses show it, the
//     deposit's "nonce" in API responses is this value (0 before Regolith),
//     and a creating deposit's contractAddress derives from it;
//   - depositReceiptVersion: 1 from Canyon (nil before);
//   - consensus: from Canyon both fields are part of the receipt's
//     consensus RLP (after the logs) and so of the receipts root; before
//     Canyon the consensus encoding omits them.
func DepositReceiptFields(cfg *Config, t, nonceBefore uint64) (depositNonce, receiptVersion *uint64, consensus bool) {
	if cfg.IsRegolith(t) {
		n := nonceBefore
		depositNonce = &n
	}
	if cfg.IsCanyon(t) {
		v := uint64(1)
		receiptVersion = &v
		consensus = true
	}
	return depositNonce, receiptVersion, consensus
}

// DepositGasUsed is the gas a deposit's receipt reports (and the block gas
// pool is charged):
//   - before Regolith: the gas limit, or 0 for a system transaction,
//     whatever happened (system transactions do not use the block's gas);
//   - from Regolith: the gas the EVM used (after the EIP-3529 refund, as for
//     any transaction), or the whole gas limit when the deposit failed with a
//     non-EVM error (failed = true; e.g. value above the balance, or
//     isSystemTx set, which Regolith forbids): the state is rolled back to
//     just after the mint and the sender's nonce is bumped.
func DepositGasUsed(cfg *Config, t uint64, isSystemTx bool, gasLimit, evmGasUsed uint64, failed bool) uint64 {
	if !cfg.IsRegolith(t) {
		if isSystemTx {
			return 0
		}
		return gasLimit
	}
	if failed {
		return gasLimit
	}
	return evmGasUsed
}

// SystemTxAllowed reports whether a deposit may set isSystemTx at time t
// (only before Regolith; from Regolith such a deposit fails, see
// DepositGasUsed).
func SystemTxAllowed(cfg *Config, t uint64) bool { return !cfg.IsRegolith(t) }
