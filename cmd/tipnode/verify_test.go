package main

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/store"
	"github.com/tipnode/tipnode/store/chaintypes"
)

// tipnode verify on a store that keeps no state trie, at a block whose
// header carries no state root (one sealed with --verify.stateroot=off),
// says it compared nothing and fails; at the genesis, whose header has
// its root, it compares the flat state's root with it and passes.
func TestVerifyNothingToCompare(t *testing.T) {
	dir := t.TempDir()
	genesis := filepath.Join(t.TempDir(), "genesis.json")
	spec := `{"config":{"chainId":1337,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"berlinBlock":0,"londonBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,"shanghaiTime":0},"gasLimit":"0x1c9c380","difficulty":"0x0","alloc":{"0x1000000000000000000000000000000000000001":{"balance":"0x1","storage":{"0x01":"0x02"}}}}`
	if err := os.WriteFile(genesis, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if err, stderr := initState(t, "--datadir", dir, "--genesis", genesis, "--verify.stateroot", "off"); err != nil {
		t.Fatalf("init: %v\n%s", err, stderr)
	}
	cfg := store.DefaultConfig(dir)
	cfg.NoTrie = true
	db, err := store.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	g, err := v.CanonicalHash(0)
	v.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := &types.Header{ParentHash: g, Number: big.NewInt(1), Difficulty: big.NewInt(0), GasLimit: 30_000_000, Time: 1}
	if err := db.WriteBlock(&store.BlockWrite{Block: chaintypes.NewBlockWithHeader(h), Diff: store.NewStateDiff()}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		block   string
		wantErr error
		want    string
	}{
		{"0", nil, "OK"},
		{"1", errVerifyUnchecked, "NOT COMPARED"},
	} {
		var out bytes.Buffer
		err := runVerify(context.Background(), []string{"--datadir", dir, "--log.level", "error", "--block", tc.block}, &out, &out)
		if !errors.Is(err, tc.wantErr) || !strings.Contains(out.String(), tc.want) {
			t.Fatalf("verify --block %s: %v, want %v and %q in\n%s", tc.block, err, tc.wantErr, tc.want, out.String())
		}
	}
}
