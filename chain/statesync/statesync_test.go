package statesync

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/chain/chaintest"
	"github.com/tipnode/tipnode/store"
)

// sourceAt serves db's state at block n.
func sourceAt(db *store.DB, n uint64) Source {
	return func() (store.View, uint64, error) {
		v, err := db.View()
		return v, n, err
	}
}

// checkJoined compares the joined store's state at 54 with history.json.
func checkJoined(t *testing.T, db *store.DB) {
	t.Helper()
	if a := db.Anchor(); a.State != 54 || a.History != 54 {
		t.Fatalf("anchor %+v", a)
	}
	view, err := db.View()
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	st, err := view.StateAt(54)
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range chaintest.LoadHistory(t)[54] {
		acc, err := st.Account(addr)
		if err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			continue
		}
		if want.Balance == nil || acc.Balance.ToBig().Cmp(want.Balance.ToInt()) != 0 || acc.Nonce != uint64(want.Nonce) {
			t.Fatalf("account %s: %s/%d", addr.Hex(), acc.Balance, acc.Nonce)
		}
		code, err := st.Code(acc.CodeHash)
		if err != nil || !bytes.Equal(code, want.Code) {
			t.Fatalf("code of %s: %d bytes %v", addr.Hex(), len(code), err)
		}
		for slot, v := range want.Storage {
			if got, err := st.Storage(addr, slot); err != nil || got != v {
				t.Fatalf("slot %s/%s: %s %v", addr.Hex(), slot.Hex(), got.Hex(), err)
			}
		}
	}
	if spec, err := view.GenesisSpec(); err != nil || len(spec) == 0 {
		t.Fatalf("genesis spec: %d bytes %v", len(spec), err)
	}
}

// TestJoinOverHTTP: a node serving the conformance chain at block 54; a
// new store joins from its stream with the state root checked (the
// conformance headers carry go-ethereum's roots) and holds the reference
// archive's state at 54.
func TestJoinOverHTTP(t *testing.T) {
	src, _ := chaintest.ImportedStore(t)
	h, err := NewHandler(DefaultConfig(), sourceAt(src, 54), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	db := chaintest.OpenStore(t)
	stats, err := JoinURL(context.Background(), srv.URL, db, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !stats.RootChecked || stats.Anchor != 54 || stats.Hash.Hex() != chaintest.HeadHash {
		t.Fatalf("stats %+v", stats)
	}
	checkJoined(t, db)
}

// TestJoinRefusesBadStreams: a changed byte (checksum), a truncated
// stream, and a changed value with a recomputed checksum (state root) are
// refused, and the store stays empty.
func TestJoinRefusesBadStreams(t *testing.T) {
	src, _ := chaintest.ImportedStore(t)
	view, err := src.View()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(context.Background(), &buf, view, 54, 4096); err != nil {
		t.Fatal(err)
	}
	view.Close()
	good := buf.Bytes()
	flipped := bytes.Clone(good)
	flipped[len(flipped)-200] ^= 1
	for name, stream := range map[string][]byte{
		"flipped":   flipped,
		"truncated": good[:len(good)-10],
		"garbage":   []byte("hello"),
	} {
		db := chaintest.OpenStore(t)
		if _, err := Join(context.Background(), bytes.NewReader(stream), db, t.TempDir()); !errors.Is(err, ErrStream) {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.Latest(); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: the store is not empty after a refused join: %v", name, err)
		}
	}
	// The state of block 53 under block 54's headers: a well-formed
	// stream whose state does not make block 54's root.
	view, err = src.View()
	if err != nil {
		t.Fatal(err)
	}
	var wrong bytes.Buffer
	if err := Write(context.Background(), &wrong, stateOf{view, 53}, 54, 4096); err != nil {
		t.Fatal(err)
	}
	view.Close()
	db := chaintest.OpenStore(t)
	if _, err := Join(context.Background(), bytes.NewReader(wrong.Bytes()), db, t.TempDir()); !errors.Is(err, ErrStream) {
		t.Fatalf("state of another block: %v", err)
	}
	if _, err := db.Latest(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the store is not empty after a refused join: %v", err)
	}
	db = chaintest.OpenStore(t)
	if _, err := Join(context.Background(), bytes.NewReader(good), db, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	checkJoined(t, db)
}

// stateOf is a view whose state is always that of block n.
type stateOf struct {
	store.View
	n uint64
}

func (s stateOf) StateAt(uint64) (store.StateReader, error) { return s.View.StateAt(s.n) }

// TestHandlerBusy: past MaxStreams a request gets 503 (ErrBusy).
func TestHandlerBusy(t *testing.T) {
	src, _ := chaintest.ImportedStore(t)
	release := make(chan struct{})
	held := make(chan struct{})
	cfg := DefaultConfig()
	cfg.MaxStreams = 1
	h, err := NewHandler(cfg, func() (store.View, uint64, error) {
		close(held)
		<-release
		v, err := src.View()
		return v, 54, err
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	first := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.URL + "/snapshot")
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first stream did not start")
	}
	_, err = JoinURL(context.Background(), srv.URL, chaintest.OpenStore(t), t.TempDir())
	close(release)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second stream: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
