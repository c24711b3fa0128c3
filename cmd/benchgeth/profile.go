package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/tipnode/tipnode/cmd/benchgeth/load"
)

// With --profile, tipnode runs with its profile listener (--pprof.addr)
// sampling mutex contention and blocking, and every workload gets one more
// saturation run of tipnode during which its CPU, mutex and block profiles
// are taken. Those runs are not in the main table: sampling costs CPU.
const (
	profileMutexFraction = 10     // --pprof.mutexfraction: 1 in 10 contention events (pprof scales the delays back up)
	profileBlockRate     = 10_000 // --pprof.blockrate: one event per 10 µs blocked (likewise scaled)
)

// profileSummary is what tipnode's profiled saturation run of one workload
// showed. The waits are those of goroutines serving requests (their stacks
// go through the RPC server's dispatch); background loops are left out.
type profileSummary struct {
	Seconds     float64       `json:"seconds"`
	Connections int           `json:"connections"`
	RPS         float64       `json:"rps"`
	CPUPerReq   time.Duration `json:"cpuPerRequest"`
	// MutexWait: time requests waited for a sync.Mutex / RWMutex another
	// goroutine held (the mutex profile; the holder's side).
	MutexWait time.Duration `json:"mutexWait"`
	// LockWait: time requests were blocked in package sync (Mutex,
	// RWMutex, WaitGroup, Cond) per the block profile.
	LockWait time.Duration `json:"lockWait"`
	// ChanWait: time requests were blocked on channels and select (the
	// execution limiter's queue among them: waiting for a core, not a lock).
	ChanWait time.Duration `json:"chanWait"`
	TopMutex string        `json:"topMutex,omitempty"`
	TopLock  string        `json:"topLock,omitempty"`
	TopChan  string        `json:"topChan,omitempty"`
	Files    []string      `json:"files"`
}

// share is a wait as a fraction of the requests' wall time: the closed loop
// keeps Connections requests in flight for Seconds.
func (p *profileSummary) share(d time.Duration) float64 {
	if p.Seconds <= 0 || p.Connections <= 0 {
		return 0
	}
	return d.Seconds() / (p.Seconds * float64(p.Connections))
}

// profilesDir is where a run in runDir keeps tipnode's profiles (--profile).
func profilesDir(runDir string) string { return filepath.Join(runDir, "profiles") }

// profileRun runs one closed-loop saturation of tipnode (job) while it takes
// its CPU, mutex and block profiles into dir, and summarizes them.
func profileRun(ctx context.Context, cfg load.Config, job load.Job, pprofURL, dir, workload string, seconds int) (*profileSummary, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kinds := []string{"profile", "mutex", "block"}
	files := make([]string, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		files[i] = filepath.Join(dir, fmt.Sprintf("%s.%s.pb.gz", workload, strings.Replace(kind, "profile", "cpu", 1)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fetchProfile(ctx, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", pprofURL, kind, seconds), files[i])
		}()
	}
	// The load runs a second longer than the profiles on both sides.
	cfg.Duration = time.Duration(seconds)*time.Second + time.Second
	res, lerr := load.ClosedLoop(ctx, cfg, job)
	wg.Wait()
	if err := errors.Join(append(errs, lerr)...); err != nil {
		return nil, fmt.Errorf("profiled run: %w", err)
	}
	s := &profileSummary{Seconds: float64(seconds), Connections: cfg.Connections, RPS: res.RPS(), CPUPerReq: res.CPUPerRequest(), Files: files}
	var err error
	// The mutex profile's stacks are the holders' (where they unlocked),
	// so every sample counts; the block profile's are the waiters'.
	if s.MutexWait, _, s.TopMutex, err = profileWaits(files[1], false, false); err != nil {
		return nil, err
	}
	if s.LockWait, s.ChanWait, s.TopLock, err = profileWaits(files[2], true, false); err != nil {
		return nil, err
	}
	if _, _, s.TopChan, err = profileWaits(files[2], true, true); err != nil {
		return nil, err
	}
	return s, nil
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileWaits reads a mutex or block profile and adds up the delay of its
// samples (with requestsOnly, of those whose stack serves a request), split
// into waits inside package sync (locks) and the rest (channels, select).
// top names the code with the most lock delay (with chanTop: the most
// channel delay) and its share.
func profileWaits(path string, requestsOnly, chanTop bool) (lock, ch time.Duration, top string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, "", err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return 0, 0, "", fmt.Errorf("%s: %w", path, err)
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "delay" {
			idx = i
		}
	}
	if idx < 0 {
		return 0, 0, "", fmt.Errorf("%s: no delay values", path)
	}
	byCaller := map[string]time.Duration{}
	wantChan := chanTop
	for _, s := range p.Sample {
		funcs := stackFuncs(s)
		if requestsOnly && !servesRequest(funcs) {
			continue
		}
		d := time.Duration(s.Value[idx]) // nanoseconds (delay is in nanoseconds in both profiles)
		inSync := false
		for _, fn := range funcs {
			if strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/sync.") {
				inSync = true
				break
			}
		}
		if inSync {
			lock += d
		} else {
			ch += d
		}
		if inSync != wantChan {
			byCaller[caller(funcs)] += d
		}
	}
	total := lock
	if wantChan {
		total = ch
	}
	type kv struct {
		k string
		v time.Duration
	}
	var list []kv
	for k, v := range byCaller {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	if len(list) > 0 && total > 0 {
		top = fmt.Sprintf("%s (%.0f%%)", list[0].k, 100*list[0].v.Seconds()/total.Seconds())
	}
	return lock, ch, top, nil
}

// stackFuncs lists a sample's functions, innermost first.
func stackFuncs(s *profile.Sample) []string {
	var out []string
	for _, loc := range s.Location {
		for _, l := range loc.Line {
			if l.Function != nil {
				out = append(out, l.Function.Name)
			}
		}
	}
	return out
}

// servesRequest reports whether a stack belongs to a request: it goes
// through the RPC server's message dispatch (HTTP, batch elements and
// websocket requests alike).
func servesRequest(funcs []string) bool {
	for _, fn := range funcs {
		if strings.HasPrefix(fn, "github.com/tipnode/tipnode/rpc.(*Server).") {
			return true
		}
	}
	return false
}

// caller is the innermost frame outside the runtime and package sync: the
// code that waited.
func caller(funcs []string) string {
	for _, fn := range funcs {
		if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/") {
			continue
		}
		return strings.TrimPrefix(fn, "github.com/tipnode/tipnode/")
	}
	return "?"
}
