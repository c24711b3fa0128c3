package ethtests

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Fixture is one blockchain test of the ethereum/tests format: the fields
// the runner reads (the rest, such as each block's decoded header and
// transactions, is left undecoded).
type Fixture struct {
	Name    string `json:"-"`
	Network string `json:"network"`
	// GenesisBlockHeader is the test's block 0: its hash and state root.
	GenesisBlockHeader struct {
		Hash      common.Hash `json:"hash"`
		StateRoot common.Hash `json:"stateRoot"`
	} `json:"genesisBlockHeader"`
	// GenesisRLP is block 0 RLP-encoded: its header fields make the
	// genesis spec together with Pre.
	GenesisRLP string             `json:"genesisRLP"`
	Pre        types.GenesisAlloc `json:"pre"`
	Blocks     []FixtureBlock     `json:"blocks"`
	// PostState is the whole state after the last valid block; some tests
	// give only its root, PostStateHash.
	PostState     types.GenesisAlloc `json:"postState"`
	PostStateHash *common.Hash       `json:"postStateHash"`
	LastBlockHash common.Hash        `json:"lastblockhash"`
	SealEngine    string             `json:"sealEngine"`
}

// FixtureBlock is one block of a test: its RLP (hex, possibly malformed
// on purpose) and, for a block that must be refused, the expected
// exception. A valid block carries its header's hash.
type FixtureBlock struct {
	RLP             string `json:"rlp"`
	ExpectException string `json:"expectException"`
	BlockHeader     *struct {
		Hash common.Hash `json:"hash"`
	} `json:"blockHeader"`
}

// Invalid reports whether the block must be refused.
func (b *FixtureBlock) Invalid() bool { return b.ExpectException != "" || b.BlockHeader == nil }

// LoadFile reads a fixture file (a JSON object of named tests), returning
// its tests sorted by name.
func LoadFile(path string) ([]*Fixture, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tests map[string]*Fixture
	if err := json.Unmarshal(data, &tests); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]*Fixture, 0, len(tests))
	for name, f := range tests {
		f.Name = name
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
