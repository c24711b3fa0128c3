// Command benchgeth benchmarks tipnode against go-ethereum on the same
// machine: it generates a deterministic big-state chain (package chaingen),
// imports it into both nodes, starts both pinned to the server CPUs, runs
// every workload against both from this process pinned to the client CPUs
// (package load), and prints one table per run. `make bench-geth` builds
// go-ethereum's cmd/geth and runs it; see README.md.
//
//	benchgeth --geth PATH --tipnode PATH [--quick] [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
	"github.com/tipnode/tipnode/cmd/benchgeth/load"
	"github.com/tipnode/tipnode/cmd/benchgeth/proc"
)

// options are the command's flags.
type options struct {
	Cache     string
	Geth      string
	Tipnode   string
	Quick     bool
	GenOnly   bool
	Chain     chaingen.Config
	Load      load.Config
	SatTime   time.Duration
	Warmup    time.Duration
	Rounds    int
	Rate      float64
	RateFrac  float64
	Workloads string
	ClientCPU string
	ServerCPU string
	Unpinned  bool
	Sequencer bool
	FeedRate  float64
	// SwapWindow is the width of the latency split around swaps.
	SwapWindow time.Duration
	SettleMax  time.Duration
	LogLevel   string
	// Profile adds a profiled saturation run of tipnode per workload
	// (profile.go).
	Profile bool
	// Compare is an earlier run's results file: tipnode's figures are
	// compared with it (report.go, printCompare).
	Compare string
	// Nodes are the nodes to run (--nodes): both, or tipnode alone.
	Nodes string
	// TipnodeArgs are extra flags of `tipnode run` (--tipnode.args).
	TipnodeArgs string
	// TipnodeEnv are extra KEY=VALUE environment variables of `tipnode
	// run` (--tipnode.env), e.g. GOMAXPROCS=1.
	TipnodeEnv string
	// ImportRounds, when above 0, measures the import alone that many
	// rounds (imports.go) instead of the full run.
	ImportRounds int
	// ImportAB is a second tipnode binary for the import rounds.
	ImportAB string
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("benchgeth", flag.ContinueOnError)
	o := &options{}
	home, _ := os.UserHomeDir()
	def, quick := chaingen.DefaultConfig(), chaingen.QuickConfig()
	ld := load.DefaultConfig()
	fs.StringVar(&o.Cache, "cache", filepath.Join(home, ".cache", "tipnode-bench"), "cache directory: generated chains, data directories, logs, results")
	fs.StringVar(&o.Geth, "geth", "", "go-ethereum's geth binary (v1.17.8; `make bench-geth` builds it into the cache)")
	fs.StringVar(&o.Tipnode, "tipnode", "bin/tipnode", "tipnode binary")
	fs.BoolVar(&o.Quick, "quick", false, fmt.Sprintf("quick run: a small chain (%d slots, %d blocks of %d) and short phases; explicit flags still win", quick.Slots, quick.Blocks, quick.TxsPerBlock))
	fs.BoolVar(&o.GenOnly, "gen-only", false, "only generate the chain and request files, print their directory and exit")
	fs.IntVar(&o.Chain.Slots, "slots", def.Slots, "ERC-20 balance slots in the genesis, over all tokens")
	fs.IntVar(&o.Chain.Tokens, "tokens", def.Tokens, "number of ERC-20 tokens")
	fs.IntVar(&o.Chain.Blocks, "blocks", def.Blocks, "blocks of transfers on top of the genesis")
	fs.IntVar(&o.Chain.TxsPerBlock, "txs", def.TxsPerBlock, "transactions per block")
	fs.IntVar(&o.Chain.Senders, "senders", def.Senders, "funded accounts signing the transactions")
	fs.IntVar(&o.Chain.Requests, "requests", def.Requests, "requests per workload file")
	fs.Uint64Var(&o.Chain.Seed, "seed", def.Seed, "request sampler seed")
	fs.DurationVar(&o.Load.Duration, "duration", ld.Duration, "open-loop measurement per workload and node")
	fs.DurationVar(&o.SatTime, "sat-duration", 10*time.Second, "closed-loop (saturation) measurement per workload and node")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "closed-loop warm-up of each node before a workload (not measured)")
	fs.IntVar(&o.Rounds, "rounds", 3, "split each measurement into this many rounds, alternating the nodes (both see the same machine noise)")
	fs.Float64Var(&o.Rate, "rate", 0, "open-loop rate (requests/s) for every workload; 0 = --rate-fraction of the slower node's saturation rate")
	fs.Float64Var(&o.RateFrac, "rate-fraction", 0.5, "open-loop rate as a fraction of the slower node's saturation throughput (when --rate is 0)")
	fs.IntVar(&o.Load.Connections, "connections", ld.Connections, "closed-loop connections (and websocket connections of the open loop)")
	fs.IntVar(&o.Load.Workers, "workers", ld.Workers, "open-loop HTTP connections (most requests in flight)")
	fs.DurationVar(&o.Load.Grace, "grace", ld.Grace, "time after a run for in-flight requests before they count as failures")
	fs.StringVar(&o.Workloads, "workloads", "all", "comma-separated workloads to run (all = "+strings.Join(workloadNames(), ",")+")")
	fs.StringVar(&o.ClientCPU, "client-cpus", "0", "CPUs of the load generator (this process)")
	fs.StringVar(&o.ServerCPU, "server-cpus", "1", "CPUs of both nodes (taskset)")
	fs.BoolVar(&o.Unpinned, "unpinned", false, "run the load generator and both nodes on every CPU (as an operator runs a node; overrides --client-cpus and --server-cpus): max rps is what a whole machine answers, and noise % then counts the load generator too")
	fs.BoolVar(&o.Sequencer, "sequencer", true, "run tipnode with --sequencer (pending = a pre-confirmation snapshot; empty blocks sealed every 2 s)")
	fs.Float64Var(&o.FeedRate, "feed-rate", 100, "with --sequencer: transactions per second sent to tipnode while the pending workloads and their latest counterparts run against it (0: none)")
	fs.DurationVar(&o.SwapWindow, "swap-window", 20*time.Millisecond, "fed workloads: latencies of requests due this long after (or before) a snapshot swap are reported apart")
	fs.DurationVar(&o.SettleMax, "settle-max", 10*time.Minute, "longest wait for a node to become idle after start-up")
	fs.StringVar(&o.LogLevel, "log.level", "info", "log level")
	fs.StringVar(&o.Nodes, "nodes", "geth,tipnode", "nodes to run: geth,tipnode or tipnode alone (a chain go-ethereum cannot load here; ratios then read \"-\", --compare still works)")
	fs.StringVar(&o.TipnodeArgs, "tipnode.args", "", "extra flags for `tipnode run`, space-separated (an A/B of one setting, e.g. \"--memory.gcpercent 100\")")
	fs.StringVar(&o.TipnodeEnv, "tipnode.env", "", "extra environment variables for `tipnode run`, space-separated KEY=VALUE (an A/B of a runtime setting, e.g. \"GOMAXPROCS=1\"; the load generator keeps its own)")
	fs.StringVar(&o.Compare, "compare", "", "an earlier run's results JSON (printed at its end): add a table of tipnode's CPU per request, init, import, store and memory here vs there (e.g. the 10M-slot chain vs the 1M-slot one)")
	fs.BoolVar(&o.Profile, "profile", false, "run tipnode with --pprof.addr and mutex/block sampling, and give every workload one more saturation run of tipnode that takes its CPU, mutex and block profiles (files under the run directory; lock and channel waits in a table)")
	fs.IntVar(&o.ImportRounds, "import-rounds", 0, "measure the import alone: this many rounds of one import per node, each on a fresh copy of its initialised store, the order rotated between rounds; prints each round (Mgas/s and CPU time per import) and the median and quartiles of the per-round ratios to go-ethereum (no workloads run)")
	fs.StringVar(&o.ImportAB, "import-ab", "", "with --import-rounds: a second tipnode binary imported in every round too (an A/B of two builds)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if o.Unpinned {
		all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
		o.ClientCPU, o.ServerCPU = all, all
	}
	if o.Quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		apply := func(name string, fn func()) {
			if !set[name] {
				fn()
			}
		}
		apply("slots", func() { o.Chain.Slots = quick.Slots })
		apply("blocks", func() { o.Chain.Blocks = quick.Blocks })
		apply("txs", func() { o.Chain.TxsPerBlock = quick.TxsPerBlock })
		apply("requests", func() { o.Chain.Requests = quick.Requests })
		apply("duration", func() { o.Load.Duration = 3 * time.Second })
		apply("sat-duration", func() { o.SatTime = 2 * time.Second })
		apply("warmup", func() { o.Warmup = 500 * time.Millisecond })
		apply("rounds", func() { o.Rounds = 1 })
	}
	return o, o.Validate()
}

// Validate checks the options.
func (o *options) Validate() error {
	for _, kv := range strings.Fields(o.TipnodeEnv) {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("--tipnode.env: %q is not KEY=VALUE", kv)
		}
	}
	if err := o.Chain.Validate(); err != nil {
		return err
	}
	if o.GenOnly {
		return nil
	}
	if o.ImportRounds < 0 || o.ImportRounds > 1000 {
		return fmt.Errorf("--import-rounds %d: want 0..1000", o.ImportRounds)
	}
	if o.ImportAB != "" {
		if o.ImportRounds == 0 {
			return errors.New("--import-ab needs --import-rounds")
		}
		if _, err := os.Stat(o.ImportAB); err != nil {
			return fmt.Errorf("--import-ab: %w", err)
		}
	}
	if o.ImportRounds > 0 && o.Nodes == "tipnode" {
		return errors.New("--import-rounds compares with go-ethereum: --nodes tipnode does not run it")
	}
	switch o.Nodes {
	case "geth,tipnode", "tipnode,geth", "tipnode":
	default:
		return fmt.Errorf("--nodes %q: want geth,tipnode or tipnode", o.Nodes)
	}
	bins := []string{o.Tipnode}
	if o.Nodes != "tipnode" {
		if o.Geth == "" {
			return errors.New("--geth is required (make bench-geth builds go-ethereum's cmd/geth v1.17.8)")
		}
		bins = append(bins, o.Geth)
	}
	for _, b := range bins {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("binary %s: %w", b, err)
		}
	}
	if err := o.Load.Validate(false); err != nil {
		return err
	}
	if o.Compare != "" {
		if _, err := readReport(o.Compare); err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
	}
	if o.FeedRate < 0 || o.FeedRate > 10_000 || o.SwapWindow <= 0 {
		return fmt.Errorf("bad --feed-rate %v (0..10000) or --swap-window %v", o.FeedRate, o.SwapWindow)
	}
	if o.SatTime <= 0 || o.Warmup < 0 || o.Rate < 0 || o.RateFrac <= 0 || o.RateFrac > 1 || o.Rounds < 1 || o.Rounds > 100 {
		return fmt.Errorf("bad --sat-duration %v, --warmup %v, --rate %v, --rate-fraction %v or --rounds %d", o.SatTime, o.Warmup, o.Rate, o.RateFrac, o.Rounds)
	}
	if _, err := o.selected(); err != nil {
		return err
	}
	for _, s := range []string{o.ClientCPU, o.ServerCPU} {
		if _, err := proc.ParseCPUList(s); err != nil {
			return err
		}
	}
	return nil
}

// nodeList is the nodes to run, in table order.
func (o *options) nodeList() []string {
	if o.Nodes == "tipnode" {
		return []string{"tipnode"}
	}
	return allNodes
}

// feeds reports whether tipnode's pending workloads are fed transactions.
func (o *options) feeds() bool { return o.Sequencer && o.FeedRate > 0 }

func workloadNames() []string {
	var names []string
	for _, w := range chaingen.Workloads() {
		names = append(names, w.Name)
	}
	return names
}

// selected returns the workloads named by --workloads, in table order.
func (o *options) selected() ([]chaingen.Workload, error) {
	all := chaingen.Workloads()
	if o.Workloads == "all" {
		return all, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(o.Workloads, ",") {
		want[strings.TrimSpace(name)] = true
	}
	var out []chaingen.Workload
	for _, w := range all {
		if want[w.Name] {
			out = append(out, w)
			delete(want, w.Name)
		}
	}
	for name := range want {
		return nil, fmt.Errorf("--workloads: unknown workload %q (have %s)", name, strings.Join(workloadNames(), ","))
	}
	return out, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgeth:", err)
		os.Exit(2)
	}
	level, err := zerolog.ParseLevel(o.LogLevel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgeth: --log.level:", err)
		os.Exit(2)
	}
	var w = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly, NoColor: !isatty.IsTerminal(os.Stderr.Fd())}
	log := zerolog.New(w).Level(level).With().Timestamp().Logger()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error().Err(err).Msg("benchmark failed")
		os.Exit(1)
	}
}
