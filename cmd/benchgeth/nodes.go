package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/cmd/benchgeth/proc"
)

// nodeKind is how to drive one client: its commands and flags.
type nodeKind struct {
	name   string
	binary string
	// initArgs, importArgs and runArgs build the command lines.
	initArgs   func(datadir, genesis string) []string
	importArgs func(datadir, chain string) []string
	runArgs    func(datadir string, p ports) []string
	// importElapsed finds the import's own timing in its output (the
	// block processing, without opening the store); ok=false if absent.
	importElapsed func(output []byte) (time.Duration, bool)
	// revertCode is the JSON-RPC error code of a reverted call: go-ethereum
	// answers 3 with the reason appended to the message, tipnode -32000
	// with the message exactly "execution reverted" (its specification);
	// both carry the revert data in "data".
	revertCode int
	// blocksElapsed, when set, finds the time spent on blocks alone (for
	// go-ethereum, without generating its state snapshot of the genesis).
	blocksElapsed func(output []byte) (time.Duration, bool)
}

// ports are the loopback ports a node listens on.
type ports struct{ http, ws, p2p, auth, pprof int }

// gethKind runs go-ethereum as an archive node with the hash scheme,
// HTTP and websocket on loopback, no peers.
func gethKind(binary string) nodeKind {
	common := func(datadir string) []string {
		return []string{"--datadir", datadir, "--state.scheme", "hash", "--gcmode", "archive"}
	}
	return nodeKind{
		name:       "geth",
		binary:     binary,
		revertCode: 3,
		initArgs: func(datadir, genesis string) []string {
			return []string{"--datadir", datadir, "--state.scheme", "hash", "init", genesis}
		},
		importArgs: func(datadir, chain string) []string {
			// No compaction after the import: tipnode does not compact either.
			return append(common(datadir), "import", "--nocompaction", chain)
		},
		runArgs: func(datadir string, p ports) []string {
			return append(common(datadir),
				"--syncmode", "full", "--nodiscover", "--maxpeers", "0", "--nat", "none",
				"--port", strconv.Itoa(p.p2p), "--authrpc.addr", "127.0.0.1", "--authrpc.port", strconv.Itoa(p.auth),
				"--ipcdisable",
				"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(p.http), "--http.api", "eth,net,web3",
				"--ws", "--ws.addr", "127.0.0.1", "--ws.port", strconv.Itoa(p.ws), "--ws.api", "eth,net,web3")
		},
		importElapsed: func(out []byte) (time.Duration, bool) {
			m := regexp.MustCompile(`Import done in ([0-9.a-zµ]+)`).FindSubmatch(out)
			if m == nil {
				return 0, false
			}
			d, err := time.ParseDuration(strings.TrimSuffix(string(m[1]), "."))
			return d, err == nil
		},
		// The sum of the "elapsed" of go-ethereum's "Imported new chain
		// segment" reports (each covers the blocks since the previous one).
		blocksElapsed: func(out []byte) (time.Duration, bool) {
			re := regexp.MustCompile(`Imported new chain segment .* elapsed=([0-9.a-zµ]+)`)
			var total time.Duration
			found := false
			for _, m := range re.FindAllSubmatch(out, -1) {
				d, err := time.ParseDuration(string(m[1]))
				if err != nil {
					return 0, false
				}
				total += d
				found = true
			}
			return total, found
		},
	}
}

// tipnodeKind runs tipnode; sequencer adds --sequencer (pending is then a
// pre-confirmation snapshot and empty blocks are sealed every 2 s).
func tipnodeKind(binary string, sequencer bool) nodeKind {
	return nodeKind{
		name:       "tipnode",
		binary:     binary,
		revertCode: -32000,
		initArgs: func(datadir, genesis string) []string {
			return []string{"init", "--datadir", datadir, "--genesis", genesis, "--log.format", "json"}
		},
		importArgs: func(datadir, chain string) []string {
			return []string{"import", "--datadir", datadir, "--log.format", "json", chain}
		},
		runArgs: func(datadir string, p ports) []string {
			args := []string{"run", "--datadir", datadir, "--log.format", "json", "--http.addr", fmt.Sprintf("127.0.0.1:%d", p.http),
				// Every request comes from one address (loopback), as from
				// behind a reverse proxy: the per-address connection limit
				// (100) and the execution queue (64) would refuse the open
				// loop's up to --workers connections and the batch workload's
				// 16 x 8 concurrent elements, where geth has no such limits.
				// Raised above what the harness can send; every other limit
				// keeps its default.
				"--rpc.maxconnsperip", "1000", "--rpc.evmqueue", "1024"}
			if sequencer {
				args = append(args, "--sequencer")
			}
			return args
		},
		importElapsed: func(out []byte) (time.Duration, bool) {
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var line struct {
					Message string `json:"message"`
					Elapsed string `json:"elapsed"`
				}
				if json.Unmarshal(sc.Bytes(), &line) == nil && line.Message == "import done" {
					d, err := time.ParseDuration(line.Elapsed)
					return d, err == nil
				}
			}
			return 0, false
		},
	}
}

// node is a running (or prepared) client and what was measured of it.
type node struct {
	kind    nodeKind
	datadir string
	logDir  string
	ports   ports
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	httpURL, wsURL string
	// profile starts tipnode with its profile listener at pprofURL.
	profile  bool
	pprofURL string
	// extraArgs are appended to the run command (--tipnode.args).
	extraArgs []string
	// extraEnv are added to the run command's environment (--tipnode.env).
	extraEnv []string

	facts nodeFacts
}

// nodeFacts are the per-node measurements outside the workloads.
type nodeFacts struct {
	Init         time.Duration `json:"init"`
	ImportWall   time.Duration `json:"importWall"`
	ImportOwn    time.Duration `json:"importOwn"` // as the node reports it
	ImportMgasPS float64       `json:"importMgasPerSecond"`
	// ImportBlocks is the block processing alone, when the node reports it
	// apart (go-ethereum); BlocksMgasPS is the gas over it.
	ImportBlocks time.Duration `json:"importBlocks,omitempty"`
	BlocksMgasPS float64       `json:"blocksMgasPerSecond,omitempty"`
	StoreBytes   int64         `json:"storeBytes"`
	Startup      time.Duration `json:"startup"`
	Settle       time.Duration `json:"settle"`
	RSSAtRest    int64         `json:"rssAtRest"`
	IdleCPU      float64       `json:"idleCPUCores"`
}

// ran is a finished command: its output, wall time and CPU time (user and
// system, the process and its waited-for children).
type ran struct {
	out  []byte
	wall time.Duration
	cpu  time.Duration
}

// runLogged runs a command to completion, its output teed into logFile.
func runLogged(ctx context.Context, logFile string, name string, args ...string) (ran, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return ran{}, err
	}
	defer f.Close()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = io.MultiWriter(f, &out)
	cmd.Stderr = cmd.Stdout
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	fmt.Fprintf(f, "$ %s %s\n", name, strings.Join(args, " "))
	start := time.Now()
	err = cmd.Run()
	r := ran{out: out.Bytes(), wall: time.Since(start)}
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return r, fmt.Errorf("%s %s: %w (log: %s)", filepath.Base(name), args[0], err, logFile)
	}
	return r, nil
}

// prepare creates a fresh data directory with the chain imported.
func (n *node) prepare(ctx context.Context, genesis, chain string, gas uint64, log zerolog.Logger) error {
	if err := os.RemoveAll(n.datadir); err != nil {
		return err
	}
	if err := os.MkdirAll(n.logDir, 0o755); err != nil {
		return err
	}
	r, err := runLogged(ctx, filepath.Join(n.logDir, n.kind.name+"-init.log"), n.kind.binary, n.kind.initArgs(n.datadir, genesis)...)
	if err != nil {
		return err
	}
	n.facts.Init = r.wall
	log.Info().Str("node", n.kind.name).Str("elapsed", r.wall.Round(time.Millisecond).String()).Msg("init done")
	r, err = runLogged(ctx, filepath.Join(n.logDir, n.kind.name+"-import.log"), n.kind.binary, n.kind.importArgs(n.datadir, chain)...)
	if err != nil {
		return err
	}
	n.facts.ImportWall = r.wall
	own, ok := n.kind.importElapsed(r.out)
	if !ok {
		own = r.wall
		log.Warn().Str("node", n.kind.name).Msg("import timing not found in the output; using wall time")
	}
	n.facts.ImportOwn = own
	n.facts.ImportMgasPS = float64(gas) / 1e6 / own.Seconds()
	if n.kind.blocksElapsed != nil {
		if d, ok := n.kind.blocksElapsed(r.out); ok && d > 0 {
			n.facts.ImportBlocks, n.facts.BlocksMgasPS = d, float64(gas)/1e6/d.Seconds()
		}
	}
	log.Info().Str("node", n.kind.name).Str("wall", r.wall.Round(time.Millisecond).String()).Str("reported", own.String()).
		Float64("Mgas/s", round1(n.facts.ImportMgasPS)).Msg("import done")
	return nil
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// start launches the node pinned to cpus (through taskset) and waits until
// it answers eth_blockNumber with at least head.
func (n *node) start(ctx context.Context, cpus []int, head uint64, log zerolog.Logger) error {
	ps, err := freePorts(5)
	if err != nil {
		return err
	}
	n.ports = ports{http: ps[0], ws: ps[1], p2p: ps[2], auth: ps[3], pprof: ps[4]}
	n.httpURL = fmt.Sprintf("http://127.0.0.1:%d", n.ports.http)
	n.wsURL = fmt.Sprintf("ws://127.0.0.1:%d", n.ports.ws)
	if n.kind.name == "tipnode" {
		n.wsURL = fmt.Sprintf("ws://127.0.0.1:%d", n.ports.http)
	}
	logFile, err := os.Create(filepath.Join(n.logDir, n.kind.name+"-run.log"))
	if err != nil {
		return err
	}
	args := append([]string{"-c", proc.CPUList(cpus), n.kind.binary}, n.kind.runArgs(n.datadir, n.ports)...)
	args = append(args, n.extraArgs...)
	if n.profile {
		addr := fmt.Sprintf("127.0.0.1:%d", n.ports.pprof)
		n.pprofURL = "http://" + addr
		args = append(args, "--pprof.addr", addr, "--pprof.mutexfraction", strconv.Itoa(profileMutexFraction), "--pprof.blockrate", strconv.Itoa(profileBlockRate))
	}
	fmt.Fprintf(logFile, "$ %s taskset %s\n", strings.Join(n.extraEnv, " "), strings.Join(args, " "))
	n.cmd = exec.Command("taskset", args...)
	if len(n.extraEnv) > 0 {
		n.cmd.Env = append(os.Environ(), n.extraEnv...)
	}
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	started := time.Now()
	if err := n.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", n.kind.name, err)
	}
	n.exited = make(chan struct{})
	go func() {
		n.waitErr = n.cmd.Wait()
		logFile.Close()
		close(n.exited)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.exited:
			return fmt.Errorf("%s exited during start-up: %v (log: %s)", n.kind.name, n.waitErr, logFile.Name())
		case <-tick.C:
		}
		if got, err := n.blockNumber(ctx); err == nil && got >= head {
			n.facts.Startup = time.Since(started)
			log.Info().Str("node", n.kind.name).Int("pid", n.pid()).Str("startup", n.facts.Startup.Round(time.Millisecond).String()).Uint64("head", got).Msg("serving")
			return nil
		}
		if time.Since(started) > 30*time.Minute {
			return fmt.Errorf("%s did not serve block %d within 30 minutes (log: %s)", n.kind.name, head, logFile.Name())
		}
	}
}

func (n *node) pid() int { return n.cmd.Process.Pid }

// call sends one JSON-RPC request over HTTP and returns the raw response.
func (n *node) call(ctx context.Context, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.httpURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("http %d: %.200s", resp.StatusCode, out)
	}
	return out, nil
}

func (n *node) blockNumber(ctx context.Context) (uint64, error) {
	out, err := n.call(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`))
	if err != nil {
		return 0, err
	}
	var r struct {
		Result hexutil.Uint64 `json:"result"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, err
	}
	return uint64(r.Result), nil
}

// settle waits until the node's CPU use stays under 5% of a core for two
// consecutive seconds (background work after start-up, such as go-ethereum
// generating its state snapshot, done), at most max.
func (n *node) settle(ctx context.Context, max time.Duration, log zerolog.Logger) error {
	start := time.Now()
	quiet := 0
	prev, err := proc.CPUTime(n.pid())
	if err != nil {
		return err
	}
	for quiet < 2 {
		if time.Since(start) > max {
			log.Warn().Str("node", n.kind.name).Str("after", max.String()).Msg("still busy; measuring anyway")
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.exited:
			return fmt.Errorf("%s exited: %v", n.kind.name, n.waitErr)
		case <-time.After(time.Second):
		}
		cur, err := proc.CPUTime(n.pid())
		if err != nil {
			return err
		}
		if cur-prev < 50*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		prev = cur
	}
	n.facts.Settle = time.Since(start)
	return nil
}

// stop interrupts the node and waits for it (killing it after a minute).
func (n *node) stop() error {
	if n.cmd == nil || n.cmd.Process == nil {
		return nil
	}
	select {
	case <-n.exited:
		return nil
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-n.exited:
		return nil
	case <-time.After(time.Minute):
		_ = n.cmd.Process.Kill()
		<-n.exited
		return errors.New(n.kind.name + " did not stop within a minute; killed")
	}
}
