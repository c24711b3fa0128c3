package pending

import (
	"sync"
	"sync/atomic"
)

// feed delivers events to callbacks, synchronously and in publication order,
// on the publisher's goroutine. Callbacks must not block (the rpc feeds call
// Subscription.Notify, which never blocks). Subscribing and unsubscribing
// are safe at any time; publishing never takes the subscription lock.
type feed[T any] struct {
	mu   sync.Mutex
	next uint64
	subs atomic.Pointer[[]feedSub[T]]
}

type feedSub[T any] struct {
	id uint64
	fn func(T)
}

// subscribe adds fn and returns the function removing it.
func (f *feed[T]) subscribe(fn func(T)) (unsubscribe func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := f.next
	var cur []feedSub[T]
	if p := f.subs.Load(); p != nil {
		cur = *p
	}
	n := append(append(make([]feedSub[T], 0, len(cur)+1), cur...), feedSub[T]{id, fn})
	f.subs.Store(&n)
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		var cur []feedSub[T]
		if p := f.subs.Load(); p != nil {
			cur = *p
		}
		n := make([]feedSub[T], 0, len(cur))
		for _, s := range cur {
			if s.id != id {
				n = append(n, s)
			}
		}
		f.subs.Store(&n)
	}
}

func (f *feed[T]) send(v T) {
	p := f.subs.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		s.fn(v)
	}
}
