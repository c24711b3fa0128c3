package pending

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/chain/devnet"
	"github.com/tipnode/tipnode/store"
)

// errInjected is the state trie failure failingView injects.
var errInjected = errors.New("injected trie read failure")

// failingView is a store view whose state trie reads fail while fail is
// set (with err, errInjected when nil): a store read error or a corrupt
// node under the pending block's live trie.
type failingView struct {
	store.View
	fail atomic.Bool
	err  error
}

func (v *failingView) StateTrie(n uint64) (*store.StateTrie, error) {
	if v.fail.Load() {
		if v.err != nil {
			return nil, v.err
		}
		return nil, errInjected
	}
	return v.View.StateTrie(n)
}

// openFailing opens a pending block on the writer's head read through a
// failingView (not failing yet) and publishes its index-0 snapshot.
func (e *builderEnv) openFailing() (*Snapshot, *failingView) {
	e.t.Helper()
	h, view, err := e.w.OpenHead()
	if err != nil {
		e.t.Fatal(err)
	}
	fv := &failingView{View: view}
	e.now = e.now.Add(time.Second)
	snap, err := e.b.Open(h, fv, NextHeader(e.g.Config, h.Header(), e.now, HeaderParams{}), e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mgr.Publish(snap)
	return snap, fv
}

// checkRootFailed checks that s reports its failed state root: RootErr
// wraps ErrStateRoot and the injected cause, no state root nor block
// hash, a header with a zero root, and a state trie refused with the same
// error (not ErrNoStateTrie: the node keeps a trie).
func checkRootFailed(t *testing.T, s *Snapshot, view store.View, what string) {
	t.Helper()
	err := s.RootErr()
	if !errors.Is(err, ErrStateRoot) || !errors.Is(err, errInjected) {
		t.Fatalf("%s: RootErr %v, want ErrStateRoot wrapping the injected failure", what, err)
	}
	if root, ok := s.StateRoot(); ok || root != (common.Hash{}) {
		t.Fatalf("%s: state root %s (%v) after a failure", what, root, ok)
	}
	if h := s.Header(); h.Root != (common.Hash{}) {
		t.Fatalf("%s: header root %s after a failure", what, h.Root)
	}
	if hash := s.BlockHash(); hash != (common.Hash{}) {
		t.Fatalf("%s: block hash %s after a failure", what, hash)
	}
	if _, err := s.StateTrie(view); !errors.Is(err, ErrStateRoot) || errors.Is(err, ErrNoStateTrie) {
		t.Fatalf("%s: state trie error %v, want ErrStateRoot", what, err)
	}
}

// TestRootFailure: a pending block's state trie update that fails (its
// trie reads fail) leaves its snapshots without a state root, and they
// say why (RootErr, ErrStateRoot with the cause): deferred (a replica's:
// the failure shows when the root is first asked, at every cut of the
// block from the failed one on) and eager (the sequencer's: at the cut).
// The seal still computes the block's root from its whole diff, and the
// final snapshot has it, without an error. (Before, a failure was
// indistinguishable from a node that keeps no trie: a zero root, and
// ErrNoStateTrie.)
func TestRootFailure(t *testing.T) {
	for _, deferred := range []bool{true, false} {
		name := "eager"
		if deferred {
			name = "deferred"
		}
		t.Run(name, func(t *testing.T) {
			e := newBuilderEnv(t)
			if deferred {
				e.b.DeferRoots()
			}
			s0, fv := e.openFailing()
			var fails []*Snapshot
			if deferred {
				s1 := e.transfer()
				s2 := e.transfer()
				if s0.RootReady() || s1.RootReady() || s2.RootReady() {
					t.Fatal("a deferred root was computed at the cut")
				}
				fv.fail.Store(true)
				fails = []*Snapshot{s2, s1, s0} // the newest asked first computes the others
			} else {
				if err := s0.RootErr(); err != nil {
					t.Fatalf("index 0: %v", err)
				}
				fv.fail.Store(true)
				fails = []*Snapshot{e.transfer(), e.transfer()}
			}
			for i, s := range fails {
				checkRootFailed(t, s, fv, fmt.Sprintf("%s snapshot %d", name, i))
			}
			fv.fail.Store(false)
			if !deferred {
				// A lost trie stays lost for the block: the next cut
				// reports the same failure, though reads work again.
				checkRootFailed(t, e.transfer(), fv, "eager cut after the failure")
			}
			want := e.wholeRoot()
			final, sealed, err := e.b.Finish(e.now)
			if err != nil {
				t.Fatal(err)
			}
			if sealed.Block.Root() != want {
				t.Fatalf("sealed root %s, from scratch %s", sealed.Block.Root(), want)
			}
			if err := final.RootErr(); err != nil {
				t.Fatalf("final snapshot: %v", err)
			}
			if root, ok := final.StateRoot(); !ok || root != want {
				t.Fatalf("final snapshot: state root %s (%v), want %s", root, ok, want)
			}
		})
	}
}

// TestForkPendingWithdrawalsRoot: on a store that keeps no state trie (a
// fork: tipnode dev --fork) of an OP chain from Isthmus, the pending
// header's withdrawals root is zero, as the sealed block's (the message
// passer's storage root is not computed without a trie), never the
// template's empty-list root; its state root is zero too. On the same
// chain with a trie, the pending withdrawals root is the message passer's
// storage root, the sealed block's.
func TestForkPendingWithdrawalsRoot(t *testing.T) {
	accs, err := devnet.Accounts(devnet.Mnemonic, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, fork := range []bool{true, false} {
		name := "trie"
		if fork {
			name = "fork"
		}
		t.Run(name, func(t *testing.T) {
			spec, err := devnet.OPGenesis(devnet.GenesisConfig{ChainID: 1337, Accounts: []common.Address{accs[0].Address}, Timestamp: 1_700_000_000})
			if err != nil {
				t.Fatal(err)
			}
			_, g, w := chaintest.InitStore(t, spec)
			exec := g.Executor()
			if fork {
				exec = exec.ForFork()
			}
			b := NewBuilder(exec)
			t.Cleanup(b.Close)
			h, view, err := w.OpenHead()
			if err != nil {
				t.Fatal(err)
			}
			var v store.View = view
			if fork {
				fv := &failingView{View: view, err: store.ErrNoTrie}
				fv.fail.Store(true)
				v = fv
			}
			now := time.Unix(1_700_000_010, 0)
			tmpl := NextHeader(g.Config, h.Header(), now, HeaderParams{})
			if tmpl.WithdrawalsHash == nil || len(exec.TrieWatch(tmpl)) == 0 {
				t.Fatal("the test chain is not an OP chain from Isthmus")
			}
			s, err := b.Open(h, v, tmpl, now)
			if err != nil {
				t.Fatal(err)
			}
			ph := s.Header()
			if err := s.RootErr(); err != nil {
				t.Fatal(err)
			}
			final, _, err := b.Finish(now)
			if err != nil {
				t.Fatal(err)
			}
			sh := final.Header()
			if ph.WithdrawalsHash == nil || sh.WithdrawalsHash == nil || *ph.WithdrawalsHash != *sh.WithdrawalsHash {
				t.Fatalf("pending withdrawals root %v, sealed %v", ph.WithdrawalsHash, sh.WithdrawalsHash)
			}
			if fork {
				if *sh.WithdrawalsHash != (common.Hash{}) || ph.Root != (common.Hash{}) {
					t.Fatalf("fork: sealed withdrawals root %s, pending state root %s, want zero", sh.WithdrawalsHash, ph.Root)
				}
			} else if ph.Root == (common.Hash{}) || ph.Root != sh.Root {
				t.Fatalf("trie: pending state root %s, sealed %s", ph.Root, sh.Root)
			}
		})
	}
}
