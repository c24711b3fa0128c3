package store

import (
	"errors"
	"math/big"
	"testing"
)

// Cached headers are copies (a caller's change does not leak into the cache)
// and an unwound block's header is not found even though it was cached.
func TestHeaderCache(t *testing.T) {
	db := openTest(t)
	c := newTestChain(t, db, nil)
	b1 := c.add(NewStateDiff())
	c.add(NewStateDiff())
	withView(t, db, func(v View) {
		h, err := v.Header(1, b1.Hash())
		if err != nil {
			t.Fatal(err)
		}
		h.Number = big.NewInt(99) // callers may modify what they get
		again, err := v.Header(1, b1.Hash())
		if err != nil || again.Number.Uint64() != 1 || again.Hash() != b1.Hash() {
			t.Fatalf("second read: %v %v", again.Number, err)
		}
	})
	if err := db.UnwindTo(0); err != nil {
		t.Fatal(err)
	}
	withView(t, db, func(v View) {
		if _, err := v.Header(1, b1.Hash()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unwound header: %v, want ErrNotFound", err)
		}
	})
}
