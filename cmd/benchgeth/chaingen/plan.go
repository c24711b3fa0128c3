package chaingen

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// TxKind is what a planned transaction does.
type TxKind int

const (
	// TokenToNew transfers tokens to a holder that had none (a new slot).
	TokenToNew TxKind = iota
	// TokenToExisting transfers tokens to a genesis holder.
	TokenToExisting
	// EtherToNew sends ether to a new account.
	EtherToNew
)

// PlannedTx is transaction j of block number N, fixed by the Config alone
// (the request sampler uses it to find the holders the blocks create).
type PlannedTx struct {
	Kind   TxKind
	Sender int            // sender index (SenderKey)
	Token  int            // token index, for token transfers
	To     common.Address // the holder or account receiving
	Amount *big.Int       // tokens or wei
}

// Plan returns transaction j (0-based) of block number n (1-based). Every
// tenth transaction is an ether transfer to a new account; of the others,
// even positions go to a new holder, odd ones to a genesis holder.
func Plan(c Config, n, j int) PlannedTx {
	p := PlannedTx{Sender: ((n-1)*c.TxsPerBlock + j) % c.Senders, Token: (n + j) % c.Tokens}
	switch {
	case j%10 == 9:
		p.Kind, p.To = EtherToNew, NewAccount(n, j)
		p.Amount = new(big.Int).Div(ether, big.NewInt(100))
	case j%2 == 0:
		p.Kind, p.To = TokenToNew, NewHolder(n, j)
		p.Amount = new(big.Int).Add(ether, big.NewInt(int64(j)))
	default:
		p.Kind, p.To = TokenToExisting, Holder((n*7919+j*104729)%c.HoldersPerToken())
		p.Amount = new(big.Int).Add(ether, big.NewInt(int64(j)))
	}
	return p
}

// NewHolderRef is a holder created by a block: its token and address.
type NewHolderRef struct {
	Token  int
	Holder common.Address
	Block  int
}

// NewHolders lists every holder the blocks of c create, in block order.
func NewHolders(c Config) []NewHolderRef {
	var out []NewHolderRef
	for n := 1; n <= c.Blocks; n++ {
		for j := 0; j < c.TxsPerBlock; j++ {
			if p := Plan(c, n, j); p.Kind == TokenToNew {
				out = append(out, NewHolderRef{Token: p.Token, Holder: p.To, Block: n})
			}
		}
	}
	return out
}
