package load

import (
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, from 1 µs to 5 minutes, with 3
// significant digits.
const (
	minLatencyMicros = 1
	maxLatencyMicros = int64(5 * time.Minute / time.Microsecond)
	sigFigs          = 3
)

// Result is what one run measured.
type Result struct {
	// Scheduled is the number of requests the run meant to send (open
	// loop); for a closed loop it equals OK + Failed.
	Scheduled int64
	// OK and Failed count responses judged by the Check; Failed also counts
	// requests not sent or not answered before the deadline.
	OK, Failed int64
	// Answered counts responses received (OK or not): the server's work.
	Answered int64
	// Elapsed is the measured window (first intended send to the last
	// answer, or the deadline).
	Elapsed time.Duration
	// Latency holds one value (µs) per answered request: from its intended
	// send time (open loop) or its send time (closed loop) to its answer.
	Latency *hdrhistogram.Histogram
	// Queue holds, for open-loop runs, how late (µs) each request left the
	// client: a high value means the client could not keep up.
	Queue *hdrhistogram.Histogram
	// ServerCPU and ClientCPU are the CPU time the server process and this
	// process used during the window.
	ServerCPU, ClientCPU time.Duration
	// ServerCPUsBusy and ClientCPUsBusy are how long the server's and the
	// client's CPUs were busy during the window, by any process (zero when
	// the Job names no CPUs).
	ServerCPUsBusy, ClientCPUsBusy time.Duration
	// Failures counts failures by kind, with one example each.
	Failures map[string]FailureCount
	// Samples are the answered requests of an open-loop run, each with its
	// intended send time, when the Job asked for them (KeepSamples): the
	// harness splits latencies by what the server did at the time.
	Samples []Sample
}

// Sample is one answered open-loop request.
type Sample struct {
	Due     time.Time     // intended send time
	Latency time.Duration // from Due to the answer
}

// FailureCount is one kind of failure.
type FailureCount struct {
	Count   int64
	Example string
}

// RPS is the rate of successful responses over the window.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// CPUPerRequest is the server's CPU time per answered request.
func (r *Result) CPUPerRequest() time.Duration {
	if r.Answered == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Answered)
}

// ClientLoad is the client's CPU use over the window in cores (near 1 on
// one pinned core means the client, not the server, limited the rate).
func (r *Result) ClientLoad() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return r.ClientCPU.Seconds() / r.Elapsed.Seconds()
}

// ServerNoise is the share of the window the server's CPUs spent on other
// processes than the server (including the other, idle, node), in cores.
func (r *Result) ServerNoise() float64 {
	if r.Elapsed <= 0 || r.ServerCPUsBusy == 0 {
		return 0
	}
	return max(0, (r.ServerCPUsBusy-r.ServerCPU).Seconds()/r.Elapsed.Seconds())
}

// ClientNoise is the share of the window the client's CPUs spent on other
// processes than this one, in cores.
func (r *Result) ClientNoise() float64 {
	if r.Elapsed <= 0 || r.ClientCPUsBusy == 0 {
		return 0
	}
	return max(0, (r.ClientCPUsBusy-r.ClientCPU).Seconds()/r.Elapsed.Seconds())
}

// QueueQuantile is the open-loop client-side delay at q (0..100).
func (r *Result) QueueQuantile(q float64) time.Duration {
	if r.Queue == nil || r.Queue.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Queue.ValueAtQuantile(q)) * time.Microsecond
}

// Quantile is the latency at q (0..100); 0 with no answers.
func (r *Result) Quantile(q float64) time.Duration {
	if r.Latency == nil || r.Latency.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Latency.ValueAtQuantile(q)) * time.Microsecond
}

// FailureKinds lists the failure kinds, most frequent first.
func (r *Result) FailureKinds() []string {
	kinds := make([]string, 0, len(r.Failures))
	for k := range r.Failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := r.Failures[kinds[i]].Count, r.Failures[kinds[j]].Count
		if a != b {
			return a > b
		}
		return kinds[i] < kinds[j]
	})
	return kinds
}

// recorder is one worker's share of a Result.
type recorder struct {
	ok, failed, answered int64
	hist, queue          *hdrhistogram.Histogram
	failures             map[string]FailureCount
	keep                 bool // keep samples (answerAt)
	samples              []Sample
}

func newRecorder() *recorder {
	return &recorder{
		hist:     hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs),
		queue:    hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs),
		failures: map[string]FailureCount{},
	}
}

// queued records how late a request left the client.
func (r *recorder) queued(d time.Duration) {
	_ = r.queue.RecordValue(max(minLatencyMicros, min(d.Microseconds(), maxLatencyMicros)))
}

// answer records an answered request and its latency.
func (r *recorder) answer(latency time.Duration, f *Failure) {
	r.answered++
	us := max(minLatencyMicros, min(latency.Microseconds(), maxLatencyMicros))
	_ = r.hist.RecordValue(us) // in range by construction
	if f != nil {
		r.fail(f)
		return
	}
	r.ok++
}

// answerAt is answer for an open-loop request due at due; it also keeps
// the sample when the recorder keeps them.
func (r *recorder) answerAt(due time.Time, f *Failure) {
	latency := time.Since(due)
	if r.keep {
		r.samples = append(r.samples, Sample{Due: due, Latency: latency})
	}
	r.answer(latency, f)
}

// fail records a failure (answered or not).
func (r *recorder) fail(f *Failure) {
	r.failed++
	fc := r.failures[f.Kind]
	fc.Count++
	if fc.Example == "" {
		fc.Example = f.Detail
	}
	r.failures[f.Kind] = fc
}

// merge adds the recorders into res.
func merge(res *Result, recs []*recorder) {
	res.Latency = hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs)
	res.Queue = hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs)
	res.Failures = map[string]FailureCount{}
	for _, r := range recs {
		res.OK += r.ok
		res.Failed += r.failed
		res.Answered += r.answered
		res.Latency.Merge(r.hist)
		res.Queue.Merge(r.queue)
		res.Samples = append(res.Samples, r.samples...)
		for k, v := range r.failures {
			fc := res.Failures[k]
			fc.Count += v.Count
			if fc.Example == "" {
				fc.Example = v.Example
			}
			res.Failures[k] = fc
		}
	}
}

// Combine adds up runs measured in separate windows (rounds of the same
// workload against the same node) into one Result: counts, windows and CPU
// times add, histograms and failures merge.
func Combine(rs ...*Result) *Result {
	out := &Result{
		Latency:  hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs),
		Queue:    hdrhistogram.New(minLatencyMicros, maxLatencyMicros, sigFigs),
		Failures: map[string]FailureCount{},
	}
	for _, r := range rs {
		out.Scheduled += r.Scheduled
		out.OK += r.OK
		out.Failed += r.Failed
		out.Answered += r.Answered
		out.Elapsed += r.Elapsed
		out.ServerCPU += r.ServerCPU
		out.ClientCPU += r.ClientCPU
		out.ServerCPUsBusy += r.ServerCPUsBusy
		out.ClientCPUsBusy += r.ClientCPUsBusy
		if r.Latency != nil {
			out.Latency.Merge(r.Latency)
		}
		if r.Queue != nil {
			out.Queue.Merge(r.Queue)
		}
		out.Samples = append(out.Samples, r.Samples...)
		for k, v := range r.Failures {
			fc := out.Failures[k]
			fc.Count += v.Count
			if fc.Example == "" {
				fc.Example = v.Example
			}
			out.Failures[k] = fc
		}
	}
	return out
}
