package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
	"github.com/tipnode/tipnode/cmd/benchgeth/load"
	"github.com/tipnode/tipnode/cmd/benchgeth/proc"
)

// summary is one run of one workload against one node.
type summary struct {
	RPS        float64       `json:"rps"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	P999       time.Duration `json:"p999"`
	CPUPerReq  time.Duration `json:"cpuPerRequest"`
	OK         int64         `json:"ok"`
	Failed     int64         `json:"failed"`
	Answered   int64         `json:"answered"`
	Elapsed    time.Duration `json:"elapsed"`
	ClientLoad float64       `json:"clientLoad"`
	// ClientNoise and ServerNoise: cores' worth of other processes on the
	// client's and the server's CPUs during the window.
	ClientNoise float64                      `json:"clientNoise"`
	ServerNoise float64                      `json:"serverNoise"`
	QueueP99    time.Duration                `json:"clientQueueP99,omitempty"`
	Failures    map[string]load.FailureCount `json:"failures,omitempty"`
}

func summarize(r *load.Result) summary {
	return summary{
		RPS: r.RPS(), P50: r.Quantile(50), P99: r.Quantile(99), P999: r.Quantile(99.9),
		CPUPerReq: r.CPUPerRequest(), OK: r.OK, Failed: r.Failed, Answered: r.Answered,
		Elapsed: r.Elapsed, ClientLoad: r.ClientLoad(), Failures: r.Failures,
		ClientNoise: r.ClientNoise(), ServerNoise: r.ServerNoise(), QueueP99: r.QueueQuantile(99),
	}
}

// workloadResult is one workload against every node.
type workloadResult struct {
	Name  string             `json:"name"`
	Title string             `json:"title"`
	Rate  float64            `json:"rate"` // open-loop rate
	Sat   map[string]summary `json:"saturation"`
	Open  map[string]summary `json:"openLoop"`
	// Feed: tipnode's runs of this workload were fed transactions (the
	// pending workloads and their latest counterparts; feed.go).
	Feed *feedSummary `json:"tipnodeFeed,omitempty"`
	// Profile: tipnode's profiled saturation run (--profile).
	Profile *profileSummary `json:"tipnodeProfile,omitempty"`
}

// report is everything a run measured (written as JSON into the cache).
type report struct {
	Started   time.Time            `json:"started"`
	Quick     bool                 `json:"quick"`
	Manifest  *chaingen.Manifest   `json:"chain"`
	Load      load.Config          `json:"load"`
	Rounds    int                  `json:"rounds"`
	SatTime   time.Duration        `json:"saturationDuration"`
	ClientCPU string               `json:"clientCPUs"`
	ServerCPU string               `json:"serverCPUs"`
	Unpinned  bool                 `json:"unpinned,omitempty"`
	Sequencer bool                 `json:"tipnodeSequencer"`
	FeedRate  float64              `json:"tipnodeFeedRate"`
	Nodes     map[string]nodeFacts `json:"nodes"`
	// TipnodeArgs are the extra flags tipnode ran with (--tipnode.args).
	TipnodeArgs string `json:"tipnodeArgs,omitempty"`
	// TipnodeEnv are the extra environment variables (--tipnode.env).
	TipnodeEnv string `json:"tipnodeEnv,omitempty"`
	// NodeOrder lists the nodes this run measured (--nodes).
	NodeOrder []string          `json:"nodeOrder,omitempty"`
	Agreement map[string]string `json:"agreement"`
	Workloads []workloadResult  `json:"workloads"`
}

// allNodes is the order nodes appear in tables.
var allNodes = []string{"geth", "tipnode"}

func run(ctx context.Context, o *options, log zerolog.Logger) error {
	chainDir := filepath.Join(o.Cache, o.Chain.Name())
	m, err := chaingen.ReadManifest(chainDir, o.Chain)
	if err != nil {
		log.Info().Str("dir", chainDir).Msg("generating the chain (deterministic; reused by later runs with the same size flags)")
		if m, err = chaingen.Generate(o.Chain, chainDir, log); err != nil {
			return err
		}
	} else {
		log.Info().Str("dir", chainDir).Msg("reusing the generated chain")
	}
	reqDir := filepath.Join(chainDir, o.Chain.RequestsName())
	if err := chaingen.WriteRequests(o.Chain, reqDir); err != nil {
		return err
	}
	if o.GenOnly {
		fmt.Println(chainDir)
		return nil
	}
	if o.ImportRounds > 0 {
		return runImports(ctx, o, m, chainDir, log)
	}
	workloads, _ := o.selected()
	reqs := map[string][][]byte{}
	for _, w := range workloads {
		if reqs[w.Name], err = readLines(chaingen.RequestsFile(reqDir, w.Name)); err != nil {
			return err
		}
	}
	serverCPUs, _ := proc.ParseCPUList(o.ServerCPU)
	clientCPUs, _ := proc.ParseCPUList(o.ClientCPU)

	runDir := filepath.Join(chainDir, "run")
	nodeOrder := o.nodeList()
	nodes := map[string]*node{
		"tipnode": {kind: tipnodeKind(o.Tipnode, o.Sequencer), datadir: filepath.Join(runDir, "tipnode"), logDir: runDir},
	}
	if slices.Contains(nodeOrder, "geth") {
		nodes["geth"] = &node{kind: gethKind(o.Geth), datadir: filepath.Join(runDir, "geth"), logDir: runDir}
	}
	nodes["tipnode"].profile = o.Profile
	// The run directory holds this run's profiles only: files left by an
	// earlier --profile run would read as this one's.
	if err := os.RemoveAll(profilesDir(runDir)); err != nil {
		return err
	}
	nodes["tipnode"].extraArgs = strings.Fields(o.TipnodeArgs)
	nodes["tipnode"].extraEnv = strings.Fields(o.TipnodeEnv)
	defer func() {
		for _, name := range nodeOrder {
			if err := nodes[name].stop(); err != nil {
				log.Warn().Err(err).Msg("stop")
			}
		}
	}()
	genesis, chainFile := filepath.Join(chainDir, chaingen.GenesisFile), filepath.Join(chainDir, chaingen.ChainFile)
	for _, name := range nodeOrder {
		n := nodes[name]
		if err := n.prepare(ctx, genesis, chainFile, m.Gas, log); err != nil {
			return err
		}
		if n.facts.StoreBytes, err = proc.DirSize(n.datadir); err != nil {
			return err
		}
	}
	// Start one node at a time so start-up is measured without the other
	// competing for the server CPUs.
	for _, name := range nodeOrder {
		n := nodes[name]
		if err := n.start(ctx, serverCPUs, m.Head, log); err != nil {
			return err
		}
		if err := n.settle(ctx, o.SettleMax, log); err != nil {
			return err
		}
	}
	if err := atRest(ctx, nodes, log); err != nil {
		return err
	}
	rep := &report{
		Started: time.Now(), Quick: o.Quick, Manifest: m, Load: o.Load, SatTime: o.SatTime, Rounds: o.Rounds,
		ClientCPU: o.ClientCPU, ServerCPU: o.ServerCPU, Unpinned: o.Unpinned, Sequencer: o.Sequencer,
		Nodes: map[string]nodeFacts{}, Agreement: map[string]string{}, NodeOrder: nodeOrder,
		TipnodeArgs: o.TipnodeArgs, TipnodeEnv: o.TipnodeEnv,
	}
	if o.feeds() {
		rep.FeedRate = o.FeedRate
	}
	for _, w := range workloads {
		if nodes["geth"] == nil {
			rep.Agreement[w.Name] = agreeSkipped
			continue
		}
		rep.Agreement[w.Name] = agree(ctx, w, reqs[w.Name], nodes["geth"], nodes["tipnode"])
		if rep.Agreement[w.Name] != agreeSame && rep.Agreement[w.Name] != agreeSkipped {
			log.Warn().Str("workload", w.Name).Str("agreement", rep.Agreement[w.Name]).Msg("the nodes answer differently")
		}
	}

	// From here on this process runs on the client CPUs only.
	if err := proc.PinSelf(clientCPUs); err != nil {
		return err
	}
	runtime.GOMAXPROCS(len(clientCPUs))

	// The feeder reads the senders' nonces after the agreement checks: fed
	// transactions change balances only from here on.
	var feed *feeder
	for _, w := range workloads {
		if o.feeds() && fed(w) && feed == nil {
			t := nodes["tipnode"]
			if feed, err = newFeeder(ctx, t.httpURL, t.wsURL, o.Chain, o.FeedRate, log); err != nil {
				return err
			}
		}
	}
	for i, w := range workloads {
		order := nodeOrder
		if i%2 == 1 && len(nodeOrder) == 2 { // alternate which node goes first
			order = []string{nodeOrder[1], nodeOrder[0]}
		}
		var wf *feeder
		if fed(w) {
			wf = feed
		}
		var latestReqs [][]byte // a fed pending workload's latest counterpart, measured in turn with it
		if wf != nil && w.LatestOf != "" {
			if latestReqs, err = readLines(chaingen.RequestsFile(reqDir, w.LatestOf)); err != nil {
				return err
			}
		}
		wr, err := runWorkload(ctx, o, w, reqs[w.Name], latestReqs, order, nodes, wf, log)
		if err != nil {
			return err
		}
		rep.Workloads = append(rep.Workloads, *wr)
	}
	pendingRatios(rep)
	for name, n := range nodes {
		rep.Nodes[name] = n.facts
	}
	out := filepath.Join(o.Cache, "results", time.Now().Format("20060102-150405")+".json")
	if err := writeJSON(out, rep); err != nil {
		return err
	}
	printReport(os.Stdout, rep, workloads)
	if o.Compare != "" {
		base, err := readReport(o.Compare)
		if err != nil {
			return err
		}
		printCompare(os.Stdout, rep, base, o.Compare, workloads)
	}
	fmt.Printf("\nFull results: %s\nLogs and data directories: %s\n", out, runDir)
	return nil
}

// atRest measures resident memory and CPU use of both idle nodes.
func atRest(ctx context.Context, nodes map[string]*node, log zerolog.Logger) error {
	const window = 5 * time.Second
	cpu0 := map[string]time.Duration{}
	for name, n := range nodes {
		c, err := proc.CPUTime(n.pid())
		if err != nil {
			return err
		}
		cpu0[name] = c
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(window):
	}
	for name, n := range nodes {
		c, err := proc.CPUTime(n.pid())
		if err != nil {
			return err
		}
		n.facts.IdleCPU = (c - cpu0[name]).Seconds() / window.Seconds()
		if n.facts.RSSAtRest, err = proc.RSS(n.pid()); err != nil {
			return err
		}
		log.Info().Str("node", name).Str("settle", n.facts.Settle.Round(time.Millisecond).String()).Int64("rssMiB", n.facts.RSSAtRest>>20).
			Str("idleCPU", pct(n.facts.IdleCPU)).Msg("at rest")
	}
	return nil
}

// fed reports whether tipnode's runs of w are fed transactions: a pending
// workload or the latest counterpart of one.
func fed(w chaingen.Workload) bool {
	if w.LatestOf != "" {
		return true
	}
	for _, p := range chaingen.Workloads() {
		if p.LatestOf == w.Name {
			return true
		}
	}
	return false
}

// pendingRatios sets every fed pending workload's CPU ratio to its latest
// counterpart (tipnode, saturation CPU per request), when both ran.
func pendingRatios(rep *report) {
	byName := map[string]*workloadResult{}
	for i := range rep.Workloads {
		byName[rep.Workloads[i].Name] = &rep.Workloads[i]
	}
	for _, w := range chaingen.Workloads() {
		p, l := byName[w.Name], byName[w.LatestOf]
		if w.LatestOf == "" || p == nil || l == nil || p.Feed == nil || l.Feed == nil {
			continue
		}
		if lc := l.Sat["tipnode"].CPUPerReq; lc > 0 {
			p.Feed.CPURatio = float64(p.Sat["tipnode"].CPUPerReq) / float64(lc)
		}
	}
}

func runWorkload(ctx context.Context, o *options, w chaingen.Workload, reqs, latestReqs [][]byte, order []string, nodes map[string]*node, feed *feeder, log zerolog.Logger) (*workloadResult, error) {
	serverCPUs, _ := proc.ParseCPUList(o.ServerCPU)
	clientCPUs, _ := proc.ParseCPUList(o.ClientCPU)
	wr := &workloadResult{Name: w.Name, Title: w.Title, Sat: map[string]summary{}, Open: map[string]summary{}}
	job := func(n *node) load.Job {
		j := load.Job{URL: n.httpURL, WebSocket: w.WebSocket, Check: checkOf(w), Requests: reqs, ServerPID: n.pid(),
			ServerCPUs: serverCPUs, ClientCPUs: clientCPUs}
		if w.WebSocket {
			j.URL = n.wsURL
		}
		j.KeepSamples = feed != nil && n == nodes["tipnode"]
		return j
	}
	// fedRun runs one measurement of node name, with the feeder running
	// when it is tipnode's and the workload is fed.
	fedRun := func(name string, fn func() (*load.Result, error)) (*load.Result, error) {
		if feed == nil || name != "tipnode" {
			return fn()
		}
		if err := feed.start(ctx); err != nil {
			return nil, err
		}
		defer feed.stop()
		return fn()
	}
	// Rounds alternate the nodes so that both see the same share of
	// whatever else the machine does.
	rounds := o.Rounds
	orderOf := func(r int) []string {
		if r%2 == 0 || len(order) == 1 {
			return order
		}
		return []string{order[1], order[0]}
	}
	for _, name := range order {
		if o.Warmup > 0 {
			cfg := o.Load
			cfg.Duration = o.Warmup
			if _, err := fedRun(name, func() (*load.Result, error) { return load.ClosedLoop(ctx, cfg, job(nodes[name])) }); err != nil {
				return nil, fmt.Errorf("%s %s warm-up: %w", w.Name, name, err)
			}
		}
	}
	sat := map[string][]*load.Result{}
	var pairLatest []*load.Result
	for r := 0; r < rounds; r++ {
		for _, name := range orderOf(r) {
			cfg := o.Load
			cfg.Duration = o.SatTime / time.Duration(rounds)
			res, err := fedRun(name, func() (*load.Result, error) { return load.ClosedLoop(ctx, cfg, job(nodes[name])) })
			if err != nil {
				return nil, fmt.Errorf("%s %s saturation: %w", w.Name, name, err)
			}
			sat[name] = append(sat[name], res)
			if name == "tipnode" && latestReqs != nil {
				// The latest counterpart right after, under the same feed:
				// the pending / latest ratio without minutes of machine
				// drift between the two workloads.
				lj := job(nodes[name])
				lj.Requests, lj.KeepSamples = latestReqs, false
				res, err := fedRun(name, func() (*load.Result, error) { return load.ClosedLoop(ctx, cfg, lj) })
				if err != nil {
					return nil, fmt.Errorf("%s %s saturation (latest counterpart): %w", w.Name, name, err)
				}
				pairLatest = append(pairLatest, res)
			}
		}
	}
	if o.Profile {
		cfg := o.Load
		secs := max(2, int((o.SatTime / time.Duration(rounds)).Seconds()))
		dir := profilesDir(filepath.Dir(nodes["tipnode"].datadir))
		p, err := func() (*profileSummary, error) {
			if feed != nil {
				if err := feed.start(ctx); err != nil {
					return nil, err
				}
				defer feed.stop()
			}
			return profileRun(ctx, cfg, job(nodes["tipnode"]), nodes["tipnode"].pprofURL, dir, w.Name, secs)
		}()
		if err != nil {
			return nil, fmt.Errorf("%s tipnode: %w", w.Name, err)
		}
		wr.Profile = p
		log.Info().Str("workload", w.Name).Float64("rps", round1(p.RPS)).Float64("cpuMicros", round1(micros(p.CPUPerReq))).
			Str("mutexWait", pct(p.share(p.MutexWait))).Str("lockWait", pct(p.share(p.LockWait))).Str("chanWait", pct(p.share(p.ChanWait))).
			Str("topMutex", p.TopMutex).Str("topLock", p.TopLock).Str("topChan", p.TopChan).Msg("profiled")
	}
	minSat := 0.0
	for _, name := range order {
		s := summarize(load.Combine(sat[name]...))
		wr.Sat[name] = s
		logSummary(log, w.Name, name, "saturation", s)
		if minSat == 0 || s.RPS < minSat {
			minSat = s.RPS
		}
	}
	wr.Rate = o.Rate
	if wr.Rate == 0 {
		wr.Rate = o.RateFrac * minSat
	}
	perRound := o.Load.Duration / time.Duration(rounds)
	if wr.Rate*perRound.Seconds() < 10 { // a rate that schedules almost nothing
		wr.Rate = 10 / perRound.Seconds()
	}
	open := map[string][]*load.Result{}
	for r := 0; r < rounds; r++ {
		for _, name := range orderOf(r) {
			cfg := o.Load
			cfg.Rate, cfg.Duration = wr.Rate, perRound
			res, err := fedRun(name, func() (*load.Result, error) { return load.OpenLoop(ctx, cfg, job(nodes[name])) })
			if err != nil {
				return nil, fmt.Errorf("%s %s open loop: %w", w.Name, name, err)
			}
			open[name] = append(open[name], res)
		}
	}
	for _, name := range order {
		c := load.Combine(open[name]...)
		s := summarize(c)
		wr.Open[name] = s
		logSummary(log, w.Name, name, fmt.Sprintf("open loop %.0f/s", wr.Rate), s)
		if feed != nil && name == "tipnode" {
			wr.Feed = summarizeFeed(feed, c.Samples, o.SwapWindow)
			f := wr.Feed
			if len(pairLatest) > 0 {
				f.LatestCPUInTurn = load.Combine(pairLatest...).CPUPerRequest()
				if f.LatestCPUInTurn > 0 {
					f.CPURatioInTurn = float64(wr.Sat["tipnode"].CPUPerReq) / float64(f.LatestCPUInTurn)
				}
			}
			log.Info().Str("workload", w.Name).Int("swaps", f.Swaps).Int("seals", f.Seals).Str("swapGap", f.SwapGap.String()).
				Float64("txsPerBlock", round1(f.TxsPerBlock)).Int64("sent", f.Sent).Int64("refused", f.Refused).
				Str("p99", f.P99.String()).Str("p99AfterSwap", f.AfterSwap.P99.String()).Str("p99BeforeSwap", f.BeforeSwap.P99.String()).
				Str("p99AfterSeal", f.AfterSeal.P99.String()).Str("p99BeforeSeal", f.BeforeSeal.P99.String()).Str("p99Rest", f.Rest.P99.String()).
				Str("p99Mid", f.Mid.P99.String()).Msg("feed")
			if f.Swaps == 0 {
				log.Warn().Str("workload", w.Name).Msg(errNoFeed.Error())
			}
		}
	}
	return wr, nil
}

func logSummary(log zerolog.Logger, workload, node, phase string, s summary) {
	ev := log.Info().Str("workload", workload).Str("node", node).Str("phase", phase).
		Float64("rps", round1(s.RPS)).Str("p50", s.P50.String()).Str("p99", s.P99.String()).
		Float64("cpuMicros", round1(micros(s.CPUPerReq))).Int64("failed", s.Failed).
		Str("clientLoad", pct(s.ClientLoad)).Str("noise c/s", pct(s.ClientNoise)+"/"+pct(s.ServerNoise))
	if s.QueueP99 > 0 {
		ev = ev.Str("clientQueueP99", s.QueueP99.String())
	}
	if s.Failed > 0 {
		for k, v := range s.Failures {
			ev = ev.Str("failure", k+": "+v.Example)
			break
		}
	}
	ev.Msg("measured")
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// pct formats a share of a core as a whole percentage.
func pct(cores float64) string { return fmt.Sprintf("%.0f%%", cores*100) }

func checkOf(w chaingen.Workload) load.Check {
	switch {
	case w.Batch:
		return load.CheckBatch
	case w.Expect == chaingen.ExpectRevert:
		return load.CheckRevert
	case w.Expect == chaingen.ExpectSimulate:
		return load.CheckSimulate
	}
	return load.CheckResult
}

// readLines reads a request file (one message per line).
func readLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			out = append(out, bytes.Clone(line))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": no requests")
	}
	return out, nil
}

// nodeList is the nodes a report covers, in table order (every node for
// results written before --nodes).
func (r *report) nodeList() []string {
	if len(r.NodeOrder) == 0 {
		return allNodes
	}
	return r.NodeOrder
}

// readReport reads a results file an earlier run wrote.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Manifest == nil || len(rep.Workloads) == 0 {
		return nil, fmt.Errorf("%s: not a benchgeth results file", path)
	}
	return &rep, nil
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
