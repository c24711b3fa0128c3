package eth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"

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

// appendHexQuantity appends the big-endian number b as a JSON quantity
// (hexutil.Big's encoding: no leading zeros, "0x0" for zero).
func appendHexQuantity(buf, b []byte) []byte {
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	buf = append(buf, '"', '0', 'x')
	switch {
	case len(b) == 0:
		buf = append(buf, '0')
	case b[0] < 0x10:
		buf = append(buf, hexDigits[b[0]])
		buf = hex.AppendEncode(buf, b[1:])
	default:
		buf = hex.AppendEncode(buf, b)
	}
	return append(buf, '"')
}

const hexDigits = "0123456789abcdef"

// appendHexList appends nodes as a JSON array of 0x-prefixed hex strings.
func appendHexList(buf []byte, nodes [][]byte) []byte {
	buf = append(buf, '[')
	for i, n := range nodes {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendHexBytes(buf, n)
	}
	return append(buf, ']')
}

// proofJSON writes the EIP-1186 answer as go-ethereum encodes it
// (internal/ethapi AccountResult, field for field and byte for byte): an
// absent account has zero balance, nonce, code hash and storage hash.
// keys are the asked slots, lens the byte length each was given in (a
// 32-byte key is echoed as is, any other as a quantity).
func proofJSON(addr common.Address, pr *store.AccountProof, keys []common.Hash, lens []int) rpc.RawResult {
	size := 512
	for _, n := range pr.Proof {
		size += 2*len(n) + 5
	}
	for _, sp := range pr.Storage {
		size += 256
		for _, n := range sp.Proof {
			size += 2*len(n) + 5
		}
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"address":`...)
	buf = appendHexBytes(buf, addr[:])
	buf = append(buf, `,"accountProof":`...)
	buf = appendHexList(buf, pr.Proof)
	var codeHash, storageHash common.Hash
	var balance [32]byte
	var nonce uint64
	if acc := pr.Account; acc != nil {
		if acc.Balance != nil {
			balance = acc.Balance.Bytes32()
		}
		codeHash, storageHash, nonce = common.BytesToHash(acc.CodeHash), acc.Root, acc.Nonce
	}
	buf = append(buf, `,"balance":`...)
	buf = appendHexQuantity(buf, balance[:])
	buf = append(buf, `,"codeHash":`...)
	buf = appendHexBytes(buf, codeHash[:])
	buf = append(buf, `,"nonce":`...)
	buf = appendHexUint64(buf, nonce)
	buf = append(buf, `,"storageHash":`...)
	buf = appendHexBytes(buf, storageHash[:])
	buf = append(buf, `,"storageProof":[`...)
	for i, k := range keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"key":`...)
		if lens[i] == common.HashLength {
			buf = appendHexBytes(buf, k[:])
		} else {
			buf = appendHexQuantity(buf, k[:])
		}
		sp := pr.Storage[i]
		buf = append(buf, `,"value":`...)
		buf = appendHexQuantity(buf, sp.Value[:])
		buf = append(buf, `,"proof":`...)
		buf = appendHexList(buf, sp.Proof)
		buf = append(buf, '}')
	}
	return append(buf, "]}"...)
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
	var pr *store.AccountProof
	if blk.Pending != nil {
		// The pending block's own trie as of the snapshot this read
		// holds: the proof is against its header's state root.
		tr, err := blk.Pending.StateTrie(blk.View)
		if err != nil {
			return nil, proofError(err)
		}
		pr, err = tr.Prove(addr, keys)
		if err != nil {
			return nil, err
		}
	} else {
		// A stored block's header names the trie's root at its height
		// (verified or computed when the block was written): the root
		// node is read by that hash, usually from the node cache.
		tr, err := blk.View.StateTrie(blk.Header.Number.Uint64())
		if err != nil {
			return nil, proofError(err)
		}
		pr, err = tr.ProveAgainst(blk.Header.Root, addr, keys)
		if err != nil {
			return nil, err
		}
	}
	return proofJSON(addr, pr, keys, lens), nil
}

// proofError says why there is no trie to prove from (-32000).
func proofError(err error) error {
	var we *store.TrieWindowError
	switch {
	case errors.As(err, &we):
		return invalidCall(fmt.Sprintf("no state proof at block %d: proofs are served for blocks %d to %d (the state trie's window, --trie.window)", we.Height, we.Base, we.Latest))
	case errors.Is(err, pending.ErrNoStateTrie):
		return invalidCall("no state proof at pending: the pending block has no state trie (this node keeps none, or its sequencer runs with --stream.roots=off); ask at latest")
	case errors.Is(err, store.ErrNoTrie):
		return invalidCall("no state proofs: this node keeps no state trie (--verify.stateroot=off, a forked dev chain, or one being built)")
	}
	return err
}
