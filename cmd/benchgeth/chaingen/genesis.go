package chaingen

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/devnet"
)

// Fixed chain parameters.
const (
	// ChainID of the benchmark chain.
	ChainID = 7357
	// GenesisTime is the genesis timestamp; go-ethereum's chain maker adds
	// 10 s per block.
	GenesisTime = 1_700_000_000
	// GasLimit of every block.
	GasLimit = 60_000_000
)

var (
	ether = big.NewInt(params.Ether)
	// SenderEther is every sender's genesis ether balance (1M ETH).
	SenderEther = new(big.Int).Mul(big.NewInt(1_000_000), ether)
	// SenderTokens is every sender's genesis balance on every token (1e9
	// tokens).
	SenderTokens = new(big.Int).Mul(big.NewInt(1_000_000_000), ether)
	// Coinbase receives the fees of generated blocks.
	Coinbase = common.HexToAddress("0xc014ba5e00000000000000000000000000000001")
)

// SenderKey is the private key of sender i: keccak256("tipnode-bench
// sender" ‖ be64(i) ‖ be64(k)) for the first k that is a valid key.
func SenderKey(i int) *ecdsa.PrivateKey {
	for k := uint64(0); ; k++ {
		buf := binary.BigEndian.AppendUint64([]byte("tipnode-bench sender"), uint64(i))
		buf = binary.BigEndian.AppendUint64(buf, k)
		if key, err := crypto.ToECDSA(crypto.Keccak256(buf)); err == nil {
			return key
		}
	}
}

// ChainConfig is the benchmark chain's config: tipnode's dev chain config
// (devnet.ChainConfig: post-merge from genesis, every fork through Osaka
// at block 0 / time 0) with chain id ChainID.
func ChainConfig() *params.ChainConfig { return devnet.ChainConfig(big.NewInt(ChainID)) }

// BuildGenesis builds the genesis of c: the system contracts, the tokens
// with Slots/Tokens holders each (plus the senders), the multicall and the
// funded senders.
func BuildGenesis(c Config) *core.Genesis { return buildGenesis(c, zerolog.Nop()) }

// buildGenesis is BuildGenesis, logging each token's storage as it is built.
func buildGenesis(c Config, log zerolog.Logger) *core.Genesis {
	start := time.Now()
	alloc := devnet.SystemContracts()
	alloc[MulticallAddress] = types.Account{Nonce: 1, Code: MulticallCode, Balance: common.Big0}
	senders := make([]common.Address, c.Senders)
	for i := range senders {
		senders[i] = crypto.PubkeyToAddress(SenderKey(i).PublicKey)
		alloc[senders[i]] = types.Account{Balance: new(big.Int).Set(SenderEther)}
	}
	holders := make([]common.Hash, c.HoldersPerToken())
	for i := range holders {
		holders[i] = BalanceSlot(Holder(i))
	}
	for t := 0; t < c.Tokens; t++ {
		storage := make(map[common.Hash]common.Hash, len(holders)+len(senders)+1)
		supply := new(big.Int)
		for i, slot := range holders {
			b := GenesisBalance(i, t)
			storage[slot] = common.BigToHash(b)
			supply.Add(supply, b)
		}
		for _, s := range senders {
			storage[BalanceSlot(s)] = common.BigToHash(SenderTokens)
			supply.Add(supply, SenderTokens)
		}
		storage[TotalSupplySlot] = common.BigToHash(supply)
		alloc[TokenAddress(t)] = types.Account{Nonce: 1, Code: TokenCode, Balance: common.Big0, Storage: storage}
		log.Info().Int("token", t+1).Int("of", c.Tokens).Int("slots", len(storage)).Str("elapsed", since(start)).Msg("building genesis")
	}
	return &core.Genesis{
		Config:     ChainConfig(),
		Timestamp:  GenesisTime,
		ExtraData:  []byte("tipnode bench"),
		GasLimit:   GasLimit,
		Difficulty: big.NewInt(0),
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Alloc:      alloc,
	}
}

// WriteGenesisJSON writes g as json.Marshal(g) would, byte for byte, without
// holding the whole document (or a copy of a token's storage map) in memory:
// the alloc and every account's storage are streamed in encoding/json's
// order (keys sorted by their text, which for fixed-length lower-case hex is
// byte order), while everything else is json.Marshal's own output. Progress
// over the storage slots is logged every few seconds.
func WriteGenesisJSON(w io.Writer, g *core.Genesis, log zerolog.Logger) error {
	shell := *g
	shell.Alloc = types.GenesisAlloc{}
	doc, err := json.Marshal(shell)
	if err != nil {
		return fmt.Errorf("encode genesis: %w", err)
	}
	before, after, err := splitOnce(doc, []byte(`"alloc":{}`), len(`"alloc":{`))
	if err != nil {
		return fmt.Errorf("encode genesis: %w", err)
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	addrs, total := sortedAlloc(g.Alloc)
	p := &progress{log: log, total: total, start: time.Now(), last: time.Now()}
	buf := make([]byte, 0, 64)
	for i, a := range addrs {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = hex.AppendEncode(buf, a[:])
		buf = append(buf, '"', ':')
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if err := writeAccountJSON(w, g.Alloc[a], p); err != nil {
			return fmt.Errorf("encode genesis account %s: %w", a, err)
		}
	}
	_, err = w.Write(after)
	return err
}

// storageMarker is how json.Marshal writes an account whose storage is the
// single zero slot; writeAccountJSON replaces it with the real storage.
var storageMarker = []byte(`"storage":{"0x` + zeros64 + `":"0x` + zeros64 + `"}`)

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// writeAccountJSON writes a as json.Marshal(a) would, streaming its storage.
func writeAccountJSON(w io.Writer, a types.Account, p *progress) error {
	if len(a.Storage) == 0 {
		doc, err := json.Marshal(a)
		if err != nil {
			return err
		}
		_, err = w.Write(doc)
		return err
	}
	shell := a
	shell.Storage = map[common.Hash]common.Hash{{}: {}}
	doc, err := json.Marshal(shell)
	if err != nil {
		return err
	}
	open := len(`"storage":{`)
	before, rest, err := splitOnce(doc, storageMarker, open)
	if err != nil {
		return err
	}
	after := rest[len(storageMarker)-open-1:] // from the storage object's closing brace
	if _, err := w.Write(before); err != nil {
		return err
	}
	keys := make([]common.Hash, 0, len(a.Storage))
	for k := range a.Storage {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b common.Hash) int { return bytes.Compare(a[:], b[:]) })
	buf := make([]byte, 0, 2*(2*common.HashLength+4)+2)
	for i, k := range keys {
		v := a.Storage[k]
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"', '0', 'x')
		buf = hex.AppendEncode(buf, k[:])
		buf = append(buf, '"', ':', '"', '0', 'x')
		buf = hex.AppendEncode(buf, v[:])
		buf = append(buf, '"')
		if _, err := w.Write(buf); err != nil {
			return err
		}
		p.add(1)
	}
	_, err = w.Write(after)
	return err
}

// splitOnce splits doc around the single occurrence of marker: before is
// doc up to keep bytes into the marker, after is doc from there on.
func splitOnce(doc, marker []byte, keep int) (before, after []byte, err error) {
	i := bytes.Index(doc, marker)
	if i < 0 || bytes.Contains(doc[i+1:], marker) {
		return nil, nil, fmt.Errorf("%q not found once in %.200s", marker, doc)
	}
	return doc[:i+keep], doc[i+keep:], nil
}

// progress logs a long count every few seconds.
type progress struct {
	log         zerolog.Logger
	done, total int
	start, last time.Time
}

func (p *progress) add(n int) {
	p.done += n
	if p.done%4096 == 0 && time.Since(p.last) > 5*time.Second {
		p.last = time.Now()
		p.log.Info().Int("slots", p.done).Int("of", p.total).Str("elapsed", since(p.start)).Msg("writing genesis")
	}
}

// since is the time since start, rounded for logs.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }

// sortedAlloc lists alloc's addresses in byte order and counts its slots.
func sortedAlloc(alloc types.GenesisAlloc) (addrs []common.Address, slots int) {
	addrs = make([]common.Address, 0, len(alloc))
	for a, acct := range alloc {
		addrs = append(addrs, a)
		slots += len(acct.Storage)
	}
	slices.SortFunc(addrs, func(a, b common.Address) int { return bytes.Compare(a[:], b[:]) })
	return addrs, slots
}
