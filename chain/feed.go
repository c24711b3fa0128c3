package chain

import (
	"sync"
	"sync/atomic"
)

// Feed is tipnode's one event mechanism: the writer's head events, the
// pending manager's published snapshots and the pool's admitted
// transactions are each a Feed, and every subscriber (rpc subscriptions,
// metrics, tests) uses the same Subscribe.
//
// Send calls every subscriber synchronously, in subscription order, on the
// publisher's goroutine, so a subscriber that reads state when called sees
// at least what the event announced. Callbacks must not block (rpc's
// subscriptions only record the event and wake their own goroutine).
// Subscribing and unsubscribing are safe at any time, also from a callback;
// Send never takes a lock. The zero value is ready to use.
type Feed[T any] struct {
	mu   sync.Mutex
	next uint64
	subs atomic.Pointer[[]feedSub[T]]
}

type feedSub[T any] struct {
	id uint64
	fn func(T)
}

// Subscribe adds fn and returns the function removing it (idempotent).
func (f *Feed[T]) Subscribe(fn func(T)) (unsubscribe func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := f.next
	cur := f.load()
	n := append(append(make([]feedSub[T], 0, len(cur)+1), cur...), feedSub[T]{id, fn})
	f.subs.Store(&n)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		cur := f.load()
		n := make([]feedSub[T], 0, len(cur))
		for _, s := range cur {
			if s.id != id {
				n = append(n, s)
			}
		}
		f.subs.Store(&n)
	}
}

func (f *Feed[T]) load() []feedSub[T] {
	if p := f.subs.Load(); p != nil {
		return *p
	}
	return nil
}

// Send delivers v to every current subscriber.
func (f *Feed[T]) Send(v T) {
	for _, s := range f.load() {
		s.fn(v)
	}
}
