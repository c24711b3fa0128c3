package load

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tipnode/tipnode/cmd/benchgeth/proc"
)

// Job is what to send and to whom.
type Job struct {
	// URL is the HTTP endpoint (http://127.0.0.1:PORT) or, with WebSocket,
	// the websocket one (ws://...).
	URL       string
	WebSocket bool
	Check     Check
	// Requests are the bodies, sent in turn (one JSON-RPC message each).
	Requests [][]byte
	// ServerPID is the process whose CPU time is measured.
	ServerPID int
	// ServerCPUs and ClientCPUs are the CPUs the server and this process
	// are pinned to: their busy time by other processes is reported as
	// noise. Optional.
	ServerCPUs, ClientCPUs []int
	// KeepSamples: an open-loop run returns every answered request's
	// intended send time and latency (Result.Samples).
	KeepSamples bool
}

func (j Job) validate() error {
	if len(j.Requests) == 0 || j.URL == "" || j.ServerPID <= 0 {
		return fmt.Errorf("%w: job needs requests, a URL and a server pid", ErrConfig)
	}
	return nil
}

// cpuWindow measures the server's and this process's CPU time, and how
// busy their CPUs were.
type cpuWindow struct {
	job                      Job
	server0, client0         time.Duration
	serverBusy0, client0Busy time.Duration
}

// cpuSample reads the server's and this process's CPU time and the busy
// time of their CPUs (zero when the job names none).
func cpuSample(job Job) (server, client, serverBusy, clientBusy time.Duration, err error) {
	if server, err = proc.CPUTime(job.ServerPID); err != nil {
		return
	}
	if client, err = proc.CPUTime(0); err != nil {
		return
	}
	if len(job.ServerCPUs) > 0 {
		if serverBusy, err = proc.CPUBusy(job.ServerCPUs); err != nil {
			return
		}
	}
	if len(job.ClientCPUs) > 0 {
		clientBusy, err = proc.CPUBusy(job.ClientCPUs)
	}
	return
}

func startCPU(job Job) (*cpuWindow, error) {
	w := &cpuWindow{job: job}
	var err error
	w.server0, w.client0, w.serverBusy0, w.client0Busy, err = cpuSample(job)
	return w, err
}

func (w *cpuWindow) stop(res *Result) error {
	s, c, sb, cb, err := cpuSample(w.job)
	if err != nil {
		return err
	}
	res.ServerCPU, res.ClientCPU = s-w.server0, c-w.client0
	if len(w.job.ServerCPUs) > 0 {
		res.ServerCPUsBusy = sb - w.serverBusy0
	}
	if len(w.job.ClientCPUs) > 0 {
		res.ClientCPUsBusy = cb - w.client0Busy
	}
	return nil
}

// ticket is one open-loop request: which line and when it was due.
type ticket struct {
	due  time.Time
	line int
}

// OpenLoop sends job's requests at cfg.Rate for cfg.Duration, measuring
// each latency from the request's intended send time. It returns after the
// last answer or at Duration + Grace, whichever is first; requests still
// unsent or unanswered then are failures.
func OpenLoop(ctx context.Context, cfg Config, job Job) (*Result, error) {
	if err := cfg.Validate(true); err != nil {
		return nil, err
	}
	if err := job.validate(); err != nil {
		return nil, err
	}
	n := int(cfg.Duration.Seconds() * cfg.Rate)
	if n < 1 {
		return nil, fmt.Errorf("%w: rate %v over %v schedules no request", ErrConfig, cfg.Rate, cfg.Duration)
	}
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	start := time.Now().Add(20 * time.Millisecond)
	ctx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Grace))
	defer cancel()

	tickets := make(chan ticket, 4096)
	var recs []*recorder
	var wg sync.WaitGroup
	var setupErr error
	if job.WebSocket {
		recs, setupErr = startWSOpen(ctx, cfg, job, tickets, &wg)
	} else {
		recs, setupErr = startHTTPOpen(ctx, cfg, job, tickets, &wg)
	}
	if setupErr != nil {
		close(tickets)
		cancel()
		wg.Wait()
		return nil, setupErr
	}
	cpu, err := startCPU(job)
	if err != nil {
		close(tickets)
		cancel()
		wg.Wait()
		return nil, err
	}
	unsent := dispatch(ctx, start, interval, n, len(job.Requests), tickets)
	close(tickets)
	wg.Wait()
	end := time.Now()

	res := &Result{Scheduled: int64(n), Elapsed: end.Sub(start)}
	if err := cpu.stop(res); err != nil {
		return nil, err
	}
	if unsent > 0 {
		r := newRecorder()
		for i := 0; i < unsent; i++ {
			r.fail(&Failure{Kind: "unsent", Detail: "not sent before the run's deadline"})
		}
		recs = append(recs, r)
	}
	merge(res, recs)
	return res, nil
}

// dispatch hands out n tickets due every interval from start, sleeping until
// each is due; it returns how many it could not hand out before ctx ended.
func dispatch(ctx context.Context, start time.Time, interval time.Duration, n, lines int, out chan<- ticket) int {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return n - i
			}
		}
		select {
		case out <- ticket{due: due, line: i % lines}:
		case <-ctx.Done():
			return n - i
		}
	}
	return 0
}

func startHTTPOpen(ctx context.Context, cfg Config, job Job, tickets <-chan ticket, wg *sync.WaitGroup) ([]*recorder, error) {
	client, err := newHTTPClient(job.URL, cfg.Workers)
	if err != nil {
		return nil, err
	}
	recs := make([]*recorder, cfg.Workers)
	var done sync.WaitGroup
	for w := range recs {
		rec := newRecorder()
		rec.keep = job.KeepSamples
		recs[w] = rec
		wg.Add(1)
		done.Add(1)
		go func() {
			defer wg.Done()
			defer done.Done()
			var buf bytes.Buffer
			for t := range tickets {
				if ctx.Err() != nil {
					rec.fail(&Failure{Kind: "unsent", Detail: "not sent before the run's deadline"})
					continue
				}
				rec.queued(time.Since(t.due))
				body, f := client.post(ctx, job.Requests[t.line], &buf)
				if f != nil && (f.Kind == "timeout" || f.Kind == "transport") {
					rec.fail(f)
					continue
				}
				if f == nil {
					_, f = checkBody(job.Check, body)
				}
				rec.answerAt(t.due, f)
			}
		}()
	}
	go func() { done.Wait(); client.close() }()
	return recs, nil
}

// startWSOpen opens cfg.Connections websocket connections; each has a
// writer taking tickets and a reader matching answers to them by id.
func startWSOpen(ctx context.Context, cfg Config, job Job, tickets <-chan ticket, wg *sync.WaitGroup) ([]*recorder, error) {
	conns := make([]*wsConn, cfg.Connections)
	for i := range conns {
		c, err := dialWS(ctx, job.URL)
		if err != nil {
			for _, c := range conns[:i] {
				c.close()
			}
			return nil, fmt.Errorf("websocket %s: %w", job.URL, err)
		}
		conns[i] = c
	}
	var recs []*recorder
	for _, c := range conns {
		wrec, rrec := newRecorder(), newRecorder()
		rrec.keep = job.KeepSamples
		recs = append(recs, wrec, rrec)
		writerDone := make(chan struct{})
		wg.Add(3)
		go func() { // closes the connection at the deadline
			defer wg.Done()
			select {
			case <-ctx.Done():
				c.close()
			case <-writerDone:
			}
		}()
		go func() { // writer
			defer wg.Done()
			var buf []byte
			for t := range tickets {
				if ctx.Err() != nil {
					wrec.fail(&Failure{Kind: "unsent", Detail: "not sent before the run's deadline"})
					continue
				}
				wrec.queued(time.Since(t.due))
				c.mu.Lock()
				id, msg, err := c.send(job.Requests[t.line], buf)
				buf = msg
				if err == nil {
					c.pending[id] = t.due
				}
				c.mu.Unlock()
				if err != nil {
					wrec.fail(&Failure{Kind: "transport", Detail: err.Error()})
				}
			}
			close(writerDone)
			c.mu.Lock()
			answered := len(c.pending) == 0
			c.mu.Unlock()
			if answered {
				c.close() // ends the reader
			}
		}()
		go func() { // reader: matches answers to requests by id
			defer wg.Done()
			for {
				id, f, err := c.read(job.Check)
				if err != nil { // closed: all answered, the deadline, or the server
					<-writerDone
					c.mu.Lock()
					for range c.pending {
						rrec.fail(&Failure{Kind: "timeout", Detail: "no answer before the run's deadline"})
					}
					clear(c.pending)
					c.mu.Unlock()
					return
				}
				c.mu.Lock()
				due, ok := c.pending[id]
				delete(c.pending, id)
				answered := len(c.pending) == 0
				c.mu.Unlock()
				if !ok {
					rrec.fail(badResponse("answer to unknown id %d", id))
				} else {
					rrec.answerAt(due, f)
				}
				if answered {
					select {
					case <-writerDone:
						c.close()
						return
					default:
					}
				}
			}
		}()
	}
	return recs, nil
}

// ClosedLoop keeps cfg.Connections requests in flight for cfg.Duration,
// each sent when the previous answer on its connection arrived.
func ClosedLoop(ctx context.Context, cfg Config, job Job) (*Result, error) {
	if err := cfg.Validate(false); err != nil {
		return nil, err
	}
	if err := job.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	ctx, cancel := context.WithDeadline(ctx, end.Add(cfg.Grace))
	defer cancel()
	var next atomic.Int64
	recs := make([]*recorder, cfg.Connections)
	var wg sync.WaitGroup
	var client *httpClient
	var conns []*wsConn
	if job.WebSocket {
		for range recs {
			c, err := dialWS(ctx, job.URL)
			if err != nil {
				for _, c := range conns {
					c.close()
				}
				return nil, fmt.Errorf("websocket %s: %w", job.URL, err)
			}
			conns = append(conns, c)
		}
	} else {
		var err error
		if client, err = newHTTPClient(job.URL, cfg.Connections); err != nil {
			return nil, err
		}
		defer client.close()
	}
	cpu, err := startCPU(job)
	if err != nil {
		return nil, err
	}
	for w := range recs {
		rec := newRecorder()
		recs[w] = rec
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			var wsbuf []byte
			for time.Now().Before(end) && ctx.Err() == nil {
				line := job.Requests[int(next.Add(1)-1)%len(job.Requests)]
				sent := time.Now()
				if job.WebSocket {
					c := conns[w]
					_, msg, err := c.send(line, wsbuf)
					wsbuf = msg
					if err != nil {
						rec.fail(&Failure{Kind: "transport", Detail: err.Error()})
						return
					}
					_, f, err := c.read(job.Check)
					if err != nil {
						rec.fail(&Failure{Kind: "transport", Detail: err.Error()})
						return
					}
					rec.answer(time.Since(sent), f)
					continue
				}
				body, f := client.post(ctx, line, &buf)
				if f != nil && (f.Kind == "timeout" || f.Kind == "transport") {
					rec.fail(f)
					continue
				}
				if f == nil {
					_, f = checkBody(job.Check, body)
				}
				rec.answer(time.Since(sent), f)
			}
		}()
	}
	if job.WebSocket {
		go func() { <-ctx.Done(); closeAll(conns) }()
	}
	wg.Wait()
	res := &Result{Elapsed: time.Since(start)}
	if err := cpu.stop(res); err != nil {
		return nil, err
	}
	closeAll(conns)
	merge(res, recs)
	res.Scheduled = res.OK + res.Failed
	return res, nil
}

func closeAll(conns []*wsConn) {
	for _, c := range conns {
		c.close()
	}
}
