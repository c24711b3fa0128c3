package replica

import (
	"crypto/ecdsa"
	"encoding/binary"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/beacon/engine"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/gorilla/websocket"

	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/pending/stream"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// The source chain: a chain built by go-ethereum (core.GenerateChain, real
// state roots and hashes), streamed the way OP subblocks and flashblocks
// stream a block being built: index 0 with the block's context, then the
// transactions in slices with the block's cumulative gas used, receipts
// root and logs bloom, and state_root, block_hash and withdrawals_root
// zero. A replica cannot compute the sealed hash of such a block (it
// computes no state root): every block boundary takes the adoption path.

// vaultCode credits CALLVALUE to the caller's slot (slot = caller):
// CALLER SLOAD CALLVALUE ADD CALLER SSTORE STOP.
var vaultCode = common.FromHex("3354340133" + "5500")

// hashLogCode logs BLOCKHASH(NUMBER-1) (LOG0 of 32 bytes): the receipts
// root then covers what BLOCKHASH answered, on a replica building on an
// in-memory parent the hash that parent adopted. (go-ethereum's
// GenerateChain resolves no older BLOCKHASH without a BlockChain.)
var hashLogCode = common.FromHex("6001430340600052" + "60206000a000")

var (
	vaultAddr   = common.Address{0x7a, 0x01}
	hashLogAddr = common.Address{0x7a, 0x02}
)

// source is a go-ethereum-built chain and its stream.
type source struct {
	db       ethdb.Database // go-ethereum's store of the chain (state of every block)
	spec     []byte
	genesis  *types.Block
	blocks   []*types.Block // blocks[i] is block i+1
	receipts []types.Receipts
	keys     []*ecdsa.PrivateKey
	addrs    []common.Address
}

// sourceOpts shapes the source chain.
type sourceOpts struct {
	Blocks int
	TxsPer int // transactions per block
	Keys   int
}

// newSource builds the chain: every block has TxsPer transactions from
// Keys senders in turn: vault deposits, BLOCKHASH logs and transfers.
func newSource(t testing.TB, o sourceOpts) *source {
	t.Helper()
	s := &source{}
	alloc := devnet.SystemContracts()
	for i := range o.Keys {
		k, err := crypto.ToECDSA(crypto.Keccak256([]byte{byte(i), 0x5e}))
		if err != nil {
			t.Fatal(err)
		}
		s.keys = append(s.keys, k)
		a := crypto.PubkeyToAddress(k.PublicKey)
		s.addrs = append(s.addrs, a)
		alloc[a] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))}
	}
	alloc[vaultAddr] = types.Account{Code: vaultCode, Balance: new(big.Int)}
	alloc[hashLogAddr] = types.Account{Code: hashLogCode, Balance: new(big.Int)}
	cfg := devnet.ChainConfig(big.NewInt(9_339))
	g := &core.Genesis{Config: cfg, Timestamp: 1_700_000_000, GasLimit: 60_000_000, Difficulty: big.NewInt(0),
		BaseFee: big.NewInt(params.InitialBaseFee), Alloc: alloc, ExtraData: []byte("replay source")}
	spec, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	s.spec = spec
	signer := types.LatestSigner(cfg)
	nonces := make([]uint64, o.Keys)
	db, blocks, receipts := core.GenerateChainWithGenesis(g, beacon.New(ethash.NewFaker()), o.Blocks, func(i int, b *core.BlockGen) {
		b.OffsetTime(-8) // 2 s blocks
		for j := range o.TxsPer {
			k := (i*o.TxsPer + j) % o.Keys
			var (
				to   common.Address
				val  = big.NewInt(0)
				gas  = uint64(60_000)
				data []byte
			)
			switch j % 3 {
			case 0:
				to, val = vaultAddr, big.NewInt(int64(1000+j))
			case 1:
				to = hashLogAddr
			case 2:
				to, val, gas = common.Address{0xbb, byte(j)}, big.NewInt(1), 21_000
			}
			tx, err := types.SignNewTx(s.keys[k], signer, &types.DynamicFeeTx{ChainID: cfg.ChainID, Nonce: nonces[k], To: &to, Value: val, Gas: gas,
				GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100 * params.GWei), Data: data})
			if err != nil {
				panic(err)
			}
			nonces[k]++
			b.AddTx(tx)
		}
	})
	s.db, s.genesis = db, g.ToBlock()
	s.blocks, s.receipts = blocks, receipts
	return s
}

// stateAt opens go-ethereum's state after block n.
func (s *source) stateAt(t testing.TB, n uint64) *state.StateDB {
	t.Helper()
	root := s.genesis.Root()
	if n > 0 {
		root = s.blocks[n-1].Root()
	}
	st, err := state.New(root, state.NewDatabase(triedb.NewDatabase(s.db, triedb.HashDefaults), state.NewCodeDB(s.db)))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// block returns source block n (1-based) as tipnode imports it.
func (s *source) block(n uint64) *chaintypes.Block { return chaintypes.FromEthBlock(s.blocks[n-1]) }

// payloadID is the stream's payload id of block n, build b (a rebuilt
// payload gets another).
func payloadID(n uint64, build byte) engine.PayloadID {
	var id engine.PayloadID
	binary.BigEndian.PutUint64(id[:], n)
	id[0] ^= build
	return id
}

// subblocks splits block n into 1+parts messages: index 0 (the context,
// no transactions: this is an L1 chain without deposits), then parts
// slices of its transactions (the last ones take the rest; a slice may be
// empty, a heartbeat). Each is encoded as op-rbuilder sends it and decoded
// by the stream decoder, so the wire format is exercised on every message.
func (s *source) subblocks(t testing.TB, n uint64, parts int) []*stream.Payload {
	t.Helper()
	b, rs := s.blocks[n-1], s.receipts[n-1]
	h := b.Header()
	txs := b.Transactions()
	id := payloadID(n, 0)
	msgs := []*stream.Payload{s.message(t, h, id, 0, nil, nil)}
	per := (len(txs) + parts - 1) / parts
	for i := range parts {
		from, to := min(i*per, len(txs)), min((i+1)*per, len(txs))
		msgs = append(msgs, s.message(t, h, id, uint64(i+1), txs[from:to], rs[:to]))
	}
	return msgs
}

// message is one subblock of the block with header h: the transactions
// txs it adds, and the cumulative receipts so far.
func (s *source) message(t testing.TB, h *types.Header, id engine.PayloadID, index uint64, txs types.Transactions, receipts types.Receipts) *stream.Payload {
	t.Helper()
	raw := []hexutil.Bytes{}
	for _, tx := range txs {
		b, err := tx.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b)
	}
	gas := uint64(0)
	var bloom types.Bloom
	for _, r := range receipts {
		b := types.CreateBloom(r)
		for i := range bloom {
			bloom[i] |= b[i]
		}
	}
	if len(receipts) > 0 {
		gas = receipts[len(receipts)-1].CumulativeGasUsed
	}
	diff := map[string]any{
		"state_root":       common.Hash{},
		"receipts_root":    types.DeriveSha(receipts, trie.NewStackTrie(nil)),
		"logs_bloom":       bloom,
		"gas_used":         hexutil.Uint64(gas),
		"block_hash":       common.Hash{},
		"transactions":     raw,
		"withdrawals":      []any{},
		"withdrawals_root": common.Hash{},
	}
	msg := map[string]any{
		"payload_id": id,
		"index":      index,
		"diff":       diff,
		"metadata":   map[string]any{"block_number": h.Number.Uint64()},
	}
	if index == 0 {
		msg["base"] = map[string]any{
			"parent_beacon_block_root": *h.ParentBeaconRoot,
			"parent_hash":              h.ParentHash,
			"fee_recipient":            h.Coinbase,
			"prev_randao":              h.MixDigest,
			"block_number":             hexutil.Uint64(h.Number.Uint64()),
			"gas_limit":                hexutil.Uint64(h.GasLimit),
			"timestamp":                hexutil.Uint64(h.Time),
			"extra_data":               hexutil.Bytes(h.Extra),
			"base_fee_per_gas":         (*hexutil.Big)(h.BaseFee),
		}
	}
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.Decode(websocket.TextMessage, data)
	if err != nil {
		t.Fatalf("the source's message does not decode: %v\n%s", err, data)
	}
	return p
}
