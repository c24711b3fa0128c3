package rpc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limiter bounds the concurrent executions of a class of expensive handlers
// (the method layer uses one for EVM executions): at most max run at once,
// at most queue more wait for a slot (first come, first served), each for at
// most wait. Handlers outside the class never go through it, so they never
// wait behind it. Safe for concurrent use.
//
// Refusals are CodeLimitExceeded (-32005) errors, which clients treat as
// "retry later":
//
//	"too many concurrent executions (N running, M queued), try again later"   the queue is full
//	"no execution slot within D (N running), try again later"                  the wait passed
//
// A request whose own deadline passes while it waits gets CodeTimeout.
type Limiter struct {
	slots chan struct{}
	queue chan struct{}
	wait  time.Duration

	running, queued atomic.Int64
	admitted        atomic.Uint64
	queueFull       atomic.Uint64
	waitTimeout     atomic.Uint64
	waitedNanos     atomic.Int64
}

// NewLimiter returns a Limiter running at most max executions at once with
// at most queue waiting, each for at most wait. max and wait must be
// positive; queue may be 0 (no waiting: refused at once when full).
func NewLimiter(max, queue int, wait time.Duration) (*Limiter, error) {
	if max <= 0 || queue < 0 || wait <= 0 {
		return nil, fmt.Errorf("rpc: limiter needs max > 0, queue >= 0 and wait > 0 (got %d, %d, %s)", max, queue, wait)
	}
	return &Limiter{slots: make(chan struct{}, max), queue: make(chan struct{}, queue), wait: wait}, nil
}

// Acquire waits for a slot and returns the function that gives it back
// (call it exactly once), or the refusal.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err *Error) {
	select {
	case l.slots <- struct{}{}:
		return l.admit(), nil
	default:
	}
	select {
	case l.queue <- struct{}{}:
	default:
		l.queueFull.Add(1)
		return nil, ErrLimit("too many concurrent executions (%d running, %d queued), try again later", cap(l.slots), cap(l.queue))
	}
	l.queued.Add(1)
	start := time.Now()
	defer func() {
		<-l.queue
		l.queued.Add(-1)
		l.waitedNanos.Add(int64(time.Since(start)))
	}()
	timer := time.NewTimer(l.wait)
	defer timer.Stop()
	select {
	case l.slots <- struct{}{}:
		return l.admit(), nil
	case <-timer.C:
		l.waitTimeout.Add(1)
		return nil, ErrLimit("no execution slot within %s (%d running), try again later", l.wait, cap(l.slots))
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ErrTimeout()
		}
		return nil, ErrServer("request canceled")
	}
}

func (l *Limiter) admit() func() {
	l.running.Add(1)
	l.admitted.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			l.running.Add(-1)
			<-l.slots
		})
	}
}

// Wrap returns h running under the limiter: the slot is held until h
// returns (so a handler that outlives its request's deadline keeps it until
// it has really stopped).
func (l *Limiter) Wrap(h Handler) Handler {
	return func(ctx context.Context, p Params) (any, error) {
		release, err := l.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		defer release()
		return h(ctx, p)
	}
}

// Busy reports whether an execution holds a slot or waits for one. A
// waiter is admitted (counted running) before it stops counting as queued,
// so under a steady load Busy does not flicker between two executions.
func (l *Limiter) Busy() bool { return l.running.Load()+l.queued.Load() > 0 }

// LimiterStats is a snapshot of a Limiter's counters.
type LimiterStats struct {
	Running, Queued        int64
	Admitted               uint64
	QueueFull, WaitTimeout uint64
	Waited                 time.Duration // total time spent queued
}

// Stats returns the current counters.
func (l *Limiter) Stats() LimiterStats {
	return LimiterStats{
		Running: l.running.Load(), Queued: l.queued.Load(), Admitted: l.admitted.Load(),
		QueueFull: l.queueFull.Load(), WaitTimeout: l.waitTimeout.Load(), Waited: time.Duration(l.waitedNanos.Load()),
	}
}

// Collector returns a Prometheus collector of the limiter, its metrics
// labelled class=class:
//
//	tipnode_rpc_exec_running             gauge   executions running
//	tipnode_rpc_exec_queued              gauge   executions waiting for a slot
//	tipnode_rpc_exec_admitted_total      counter executions started
//	tipnode_rpc_exec_refused_total       counter by reason: queue_full, wait_timeout
//	tipnode_rpc_exec_wait_seconds_total  counter time spent waiting
func (l *Limiter) Collector(class string) prometheus.Collector {
	c := prometheus.Labels{"class": class}
	return limiterCollector{l: l, descs: [5]*prometheus.Desc{
		prometheus.NewDesc("tipnode_rpc_exec_running", "Executions running.", nil, c),
		prometheus.NewDesc("tipnode_rpc_exec_queued", "Executions waiting for a slot.", nil, c),
		prometheus.NewDesc("tipnode_rpc_exec_admitted_total", "Executions started.", nil, c),
		prometheus.NewDesc("tipnode_rpc_exec_refused_total", "Executions refused, by reason.", []string{"reason"}, c),
		prometheus.NewDesc("tipnode_rpc_exec_wait_seconds_total", "Time executions spent waiting for a slot.", nil, c),
	}}
}

type limiterCollector struct {
	l     *Limiter
	descs [5]*prometheus.Desc
}

func (c limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c limiterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.l.Stats()
	ch <- prometheus.MustNewConstMetric(c.descs[0], prometheus.GaugeValue, float64(st.Running))
	ch <- prometheus.MustNewConstMetric(c.descs[1], prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(c.descs[2], prometheus.CounterValue, float64(st.Admitted))
	ch <- prometheus.MustNewConstMetric(c.descs[3], prometheus.CounterValue, float64(st.QueueFull), "queue_full")
	ch <- prometheus.MustNewConstMetric(c.descs[3], prometheus.CounterValue, float64(st.WaitTimeout), "wait_timeout")
	ch <- prometheus.MustNewConstMetric(c.descs[4], prometheus.CounterValue, st.Waited.Seconds())
}
