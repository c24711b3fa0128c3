package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain"
	"github.com/tipnode/tipnode/store"
)

// errVerifyFailed is the answer of a verify that found a mismatch.
var errVerifyFailed = errors.New("store verification failed")

// errVerifyUnchecked is the answer of a verify that had nothing to compare
// the flat state's root with (no trie kept, no root in the header).
var errVerifyUnchecked = errors.New("store not verified: nothing to compare the flat state's root with")

// runVerify checks a store: the state root recomputed from the flat state
// alone, the state trie walked node by node (every node's hash checked),
// and the block header's state root must all agree.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf    StoreFlags
		lc    LogConfig
		block string
	)
	sf.register(fs, datadirRequired)
	lc.register(fs)
	fs.StringVar(&block, "block", "latest", "block whose state is checked (a number within the state trie's window, or latest)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if sf.DataDir == "" || fs.NArg() > 0 {
		return errors.New("usage: tipnode verify --datadir DIR [--block N|latest]")
	}
	log := lc.logger(stderr)
	db, view, closeAll, err := openReadView(&sf, log)
	if err != nil {
		return err
	}
	defer closeAll()
	n, err := blockOrLatest(view, "block", block)
	if err != nil {
		return err
	}
	h, err := chain.ViewHeaders{View: view}.HeaderByNumber(n)
	if err != nil {
		return err
	}
	start := time.Now()
	log.Info().Uint64("block", n).Msg("recomputing the state root from the flat state")
	flat, err := db.StateRootFromFlat(n, func(s store.TrieBuildStats) {
		log.Info().Int64("accounts", s.Accounts).Int64("slots", s.Slots).Dur("elapsed", s.Duration).Msg("flat state")
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	trieRoot, trieNote := common.Hash{}, ""
	tr, err := view.StateTrie(n)
	switch {
	case errors.Is(err, store.ErrNoTrie):
		trieNote = "none kept (--verify.stateroot=off, or a fork)"
	case err != nil:
		return err
	default:
		log.Info().Uint64("block", n).Msg("walking the state trie, checking every node")
		check, err := tr.Check(func(s store.TrieCheckStats) {
			log.Info().Int64("accounts", s.Accounts).Int64("slots", s.Slots).Int64("nodes", s.Nodes).Dur("elapsed", s.Duration).Msg("state trie")
		})
		if err != nil {
			fmt.Fprintf(stdout, "block %d: the state trie is broken: %v\n", n, err)
			return errVerifyFailed
		}
		trieRoot = check.Root
		trieNote = fmt.Sprintf("%s (%d accounts, %d slots, %d nodes)", check.Root.Hex(), check.Accounts, check.Slots, check.Nodes)
		if check.Accounts != flat.Accounts || check.Slots != flat.Slots {
			fmt.Fprintf(stdout, "block %d: the trie holds %d accounts and %d slots, the flat state %d and %d\n", n, check.Accounts, check.Slots, flat.Accounts, flat.Slots)
			return errVerifyFailed
		}
	}
	fmt.Fprintf(stdout, "block %d %s\n  header state root: %s\n  flat state root:   %s (%d accounts, %d slots)\n  state trie root:   %s\n  took %s\n",
		n, h.Hash().Hex(), h.Root.Hex(), flat.Root.Hex(), flat.Accounts, flat.Slots, trieNote, time.Since(start).Round(time.Millisecond))
	ok := trieRoot == (common.Hash{}) || trieRoot == flat.Root
	if h.Root != (common.Hash{}) {
		ok = ok && h.Root == flat.Root
	} else {
		fmt.Fprintln(stdout, "  the header carries no state root (sealed before tipnode kept roots, or a fork)")
		if trieRoot == (common.Hash{}) {
			fmt.Fprintln(stdout, "NOT COMPARED: the store keeps no state trie and the header carries no state root, so the flat state's root has nothing to be compared with")
			return errVerifyUnchecked
		}
	}
	if !ok {
		fmt.Fprintln(stdout, "MISMATCH")
		return errVerifyFailed
	}
	fmt.Fprintln(stdout, "OK")
	return nil
}
