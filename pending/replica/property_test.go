package replica

import (
	"math/big"
	"math/rand"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// script is a sequencer's run turned into messages, with the oracle: the
// snapshot each (block, transaction count) was published as.
type script struct {
	p    *pair
	msgs []sent
}

func newScript(t testing.TB) *script {
	p := newPair(t, DefaultConfig())
	s := p.s
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(contextCode))
	s.Send(0, nil, big.NewInt(0), 300_000, pendingtest.InitCode(burnerCode))
	s.Tick(1)
	for b := 0; b < 4; b++ {
		for range 3 {
			p.s.Send(1, &p.ctx, big.NewInt(0), 300_000, nil)
			p.s.Send(2, &common.Address{0xbb}, big.NewInt(1), 21_000, nil)
			s.Tick(1)
		}
		s.Seal()
	}
	return &script{p: p, msgs: s.take()}
}

// replay feeds the script's messages to a fresh replica, perturbed by ops
// (each byte one step: in order, duplicate, skip, swap, import the next
// canonical block, stream down), and checks after every step that the
// replica serves nothing, or exactly the sequencer's state for the block
// and transaction count it serves: never a hole, never a divergent state.
func (sc *script) replay(t testing.TB, ops []byte) (checked int) {
	r := newRepSide(t, sc.p.s.Spec, DefaultConfig())
	check := &pair{t: t, s: sc.p.s, r: r, addrs: sc.p.addrs, ctx: sc.p.ctx, burn: sc.p.burn}
	byKey := map[[2]uint64]sent{}
	for _, m := range sc.msgs {
		byKey[[2]uint64{m.snap.Number(), uint64(len(m.snap.Transactions()))}] = m
	}
	verify := func() {
		t.Helper()
		cur := r.mgr.Current()
		v := pendingOf(t, r.mgr)
		served := v.served
		v.close()
		if !served || cur == nil {
			return
		}
		checked++
		want, ok := byKey[[2]uint64{cur.Number(), uint64(len(cur.Transactions()))}]
		if !ok {
			t.Fatalf("the replica serves block %d with %d transactions: the sequencer never published that", cur.Number(), len(cur.Transactions()))
		}
		check.same(want)
	}
	next, canon := 0, uint64(0)
	for _, op := range ops {
		switch op % 6 {
		case 0, 1: // in order
			if next < len(sc.msgs) {
				r.feed(sc.msgs[next])
				next++
			}
		case 2: // duplicate the last one
			if next > 0 {
				r.feed(sc.msgs[next-1])
			}
		case 3: // lose one
			next = min(next+1, len(sc.msgs))
		case 4: // swap two
			if next+1 < len(sc.msgs) {
				r.feed(sc.msgs[next+1], sc.msgs[next])
				next += 2
			}
		case 5: // the next canonical block arrives, or the stream drops
			if op%12 == 5 && canon < sc.p.s.Writer.Head().Number() {
				canon++
				r.importFrom(sc.p.s, canon)
			} else {
				r.d.Down(nil)
				r.d.Sync()
			}
		}
		verify()
	}
	return checked
}

// TestReplicaNeverServesHoles: random perturbations of a real sequencer's
// stream (loss, duplicates, reordering, canonical blocks at random
// moments, stream drops).
func TestReplicaNeverServesHoles(t *testing.T) {
	sc := newScript(t)
	rng := rand.New(rand.NewSource(1))
	served := 0
	for i := range 12 {
		ops := make([]byte, 40)
		rng.Read(ops)
		if i == 0 {
			ops = make([]byte, 40) // all in order
		}
		served += sc.replay(t, ops)
	}
	// The in-order run alone serves at every step; the perturbed ones in
	// between their resets.
	if served < 40 {
		t.Fatalf("only %d steps served a pending block", served)
	}
	t.Logf("%d steps checked against the sequencer", served)
}

// FuzzReplicaSequence is TestReplicaNeverServesHoles driven by the fuzzer.
func FuzzReplicaSequence(f *testing.F) {
	sc := newScript(f)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 2, 3, 0, 4, 5, 17, 0, 0, 4, 0, 11, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		sc.replay(t, ops)
	})
}
