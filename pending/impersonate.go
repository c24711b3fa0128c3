package pending

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Impersonation (tipnode dev's anvil_impersonateAccount): a block holds
// signed transactions and its sender is recovered from the signature, so a
// transaction sent "from" an address without its key carries a marker
// signature instead: R = the sender's address (20 bytes, right-aligned),
// S = impersonatedS, recovery id 0. It is not a valid secp256k1 signature
// of that address (types.Sender fails on it or recovers another address),
// so such a transaction is only ever executed by a Builder that allows
// impersonation (the dev sequencer's), and blocks holding one are dev-only:
// `tipnode import` or a follower of them refuses the block (sender
// recovery). The marker keeps the hashes of two impersonated transactions
// with the same fields but different senders distinct, and lets every
// reader find the sender again without any table (ImpersonatedSender), so
// it survives restarts.

// impersonatedS is the S value of the marker signature: the bytes of
// "tipnode impersonated" (no real signature of a sender has it: S of an
// ECDSA signature is a random 256-bit scalar).
var impersonatedS = new(big.Int).SetBytes([]byte("tipnode impersonated"))

// Impersonate returns tx (its signature ignored) with the marker signature
// of sender from (see above). signer must be the chain's (for V of a
// legacy transaction).
func Impersonate(signer types.Signer, tx *types.Transaction, from common.Address) (*types.Transaction, error) {
	sig := make([]byte, 65)
	copy(sig[32-common.AddressLength:32], from[:])
	impersonatedS.FillBytes(sig[32:64])
	return tx.WithSignature(signer, sig)
}

// ImpersonatedSender returns the sender of a transaction carrying the
// marker signature of Impersonate (ok false for any other transaction).
func ImpersonatedSender(tx *types.Transaction) (from common.Address, ok bool) {
	_, r, s := tx.RawSignatureValues()
	if s == nil || r == nil || s.Cmp(impersonatedS) != 0 || r.Sign() <= 0 || r.BitLen() > 8*common.AddressLength {
		return common.Address{}, false
	}
	return common.BigToAddress(r), true
}

func isImpersonated(tx *types.Transaction) bool {
	_, ok := ImpersonatedSender(tx)
	return ok
}

// DevSigner wraps the chain's signer so that a transaction with the marker
// signature of Impersonate has its impersonated sender. Readers use it to
// show "from" of such transactions; the dev Builder to execute them.
func DevSigner(s types.Signer) types.Signer { return devSigner{s} }

type devSigner struct{ types.Signer }

func (d devSigner) Sender(tx *types.Transaction) (common.Address, error) {
	if from, ok := ImpersonatedSender(tx); ok {
		return from, nil
	}
	return d.Signer.Sender(tx)
}

func (d devSigner) Equal(o types.Signer) bool {
	x, ok := o.(devSigner)
	return ok && d.Signer.Equal(x.Signer)
}
