package eth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/tipnode/tipnode/pending"
	"github.com/tipnode/tipnode/rpc"
	"github.com/tipnode/tipnode/store"
)

// MaxProofKeys caps the storage keys of one eth_getProof (go-ethereum's
// cap): each costs a walk of the account's storage trie.
const MaxProofKeys = 1024

// registerProof installs eth_getProof.
func (a *API) registerProof(s *rpc.Server) {
	s.Register("eth_getProof", a.getProof, rpc.HonoursContext)
}

// proofResult is EIP-1186's answer, field for field as go-ethereum encodes
// it (internal/ethapi AccountResult).
type proofResult struct {
	Address      common.Address `json:"address"`
	AccountProof []string       `json:"accountProof"`
	Balance      *hexutil.Big   `json:"balance"`
	CodeHash     common.Hash    `json:"codeHash"`
	Nonce        hexutil.Uint64 `json:"nonce"`
	StorageHash  common.Hash    `json:"storageHash"`
	StorageProof []slotResult   `json:"storageProof"`
}

type slotResult struct {
	Key   string       `json:"key"`
	Value *hexutil.Big `json:"value"`
	Proof []string     `json:"proof"`
}

// proofKey parses a storage key as go-ethereum does: hex, the 0x prefix
// optional, an odd digit count padded, at most 32 bytes. It returns the
// key and the byte length given (the answer echoes a 32-byte key as is and
// any other as a quantity).
func proofKey(s string) (common.Hash, int, error) {
	h := s
	if strings.HasPrefix(h, "0x") || strings.HasPrefix(h, "0X") {
		h = h[2:]
	}
	if len(h)%2 == 1 {
		h = "0" + h
	}
	if len(h) > 64 {
		return common.Hash{}, len(h) / 2, errors.New("storage key too long (want at most 32 bytes)")
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return common.Hash{}, 0, errors.New("invalid hex in storage key")
	}
	return common.BytesToHash(b), len(b), nil
}

func hexList(nodes [][]byte) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = hexutil.Encode(n)
	}
	return out
}

// getProof implements eth_getProof(address, storageKeys, block): the
// account and storage proofs of EIP-1186 from the state trie at the block
// (latest, safe, finalized, any block inside the trie's window W, by number
// or hash). An absent account is answered as go-ethereum answers it (zero
// code hash and storage hash, its proof of absence); the slots of an
// account without storage have the zero value and an empty proof.
func (a *API) getProof(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.AtMost(3); err != nil {
		return nil, err
	}
	var addr common.Address
	if err := p.Decode(0, "address", &addr); err != nil {
		return nil, err
	}
	var raw []string
	if err := p.Decode(1, "storage keys", &raw); err != nil {
		return nil, err
	}
	if len(raw) > MaxProofKeys {
		return nil, rpc.ErrInvalidParams("too many storage keys requested (max %d, got %d)", MaxProofKeys, len(raw))
	}
	keys := make([]common.Hash, len(raw))
	lens := make([]int, len(raw))
	for i, s := range raw {
		var err error
		if keys[i], lens[i], err = proofKey(s); err != nil {
			return nil, rpc.ErrInvalidParams("%v: %s", err, quoteInput(s))
		}
	}
	blk, err := a.resolveParam(ctx, p, 2)
	if err != nil {
		return nil, err
	}
	defer blk.Close()
	var tr *store.StateTrie
	if blk.Pending != nil {
		// The pending block's own trie as of the snapshot this read
		// holds: the proof is against its header's state root.
		tr, err = blk.Pending.StateTrie(blk.View)
	} else {
		tr, err = blk.View.StateTrie(blk.Header.Number.Uint64())
	}
	if err != nil {
		return nil, proofError(err)
	}
	pr, err := tr.Prove(addr, keys)
	if err != nil {
		return nil, err
	}
	res := &proofResult{Address: addr, AccountProof: hexList(pr.Proof), Balance: (*hexutil.Big)(new(big.Int)), StorageProof: make([]slotResult, len(keys))}
	if acc := pr.Account; acc != nil {
		res.Balance = (*hexutil.Big)(acc.Balance.ToBig())
		res.CodeHash = common.BytesToHash(acc.CodeHash)
		res.Nonce = hexutil.Uint64(acc.Nonce)
		res.StorageHash = acc.Root
	}
	for i, k := range keys {
		out := hexutil.Encode(k[:])
		if lens[i] != common.HashLength {
			out = hexutil.EncodeBig(k.Big())
		}
		sp := pr.Storage[i]
		res.StorageProof[i] = slotResult{Key: out, Value: (*hexutil.Big)(sp.Value.Big()), Proof: hexList(sp.Proof)}
	}
	return res, nil
}

// proofError says why there is no trie to prove from (-32000).
func proofError(err error) error {
	var we *store.TrieWindowError
	switch {
	case errors.As(err, &we):
		return invalidCall(fmt.Sprintf("no state proof at block %d: proofs are served for blocks %d to %d (the state trie's window, --trie.window)", we.Height, we.Base, we.Latest))
	case errors.Is(err, pending.ErrNoStateTrie):
		return invalidCall("no state proof at pending: the pending block has no state trie (this node keeps none, or its update failed at a pre-confirmation); ask at latest")
	case errors.Is(err, store.ErrNoTrie):
		return invalidCall("no state proofs: this node keeps no state trie (--verify.stateroot=off, a forked dev chain, or one being built)")
	}
	return err
}
