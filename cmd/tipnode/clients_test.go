package main

// The client-compatibility suite: viem, ethers v6 and web3.js v4 (pinned in
// testdata/clients/package-lock.json) against a real `tipnode dev` process
// built from this package. The libraries are installed from the npm
// registry with `npm ci` into a cache directory keyed by the lock file, once
// per lock file; the test skips, saying so, when node or npm is missing or
// the registry cannot be reached. testdata/clients/README.md lists what each
// script checks.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tipnode/tipnode/chain/chaintest"
)

const clientsDir = "testdata/clients"

// clientResult is one (library, feature) outcome printed by run.mjs.
type clientResult struct {
	Lib     string `json:"lib"`
	Feature string `json:"feature"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
	MS      int    `json:"ms"`
}

func TestClientLibraries(t *testing.T) {
	if testing.Short() {
		t.Skip("client-compatibility suite skipped in -short mode")
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("client-compatibility suite skipped: node is not installed (needs node >= 18 and npm)")
	}
	npmBin, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("client-compatibility suite skipped: npm is not installed")
	}
	if v, err := exec.Command(nodeBin, "-p", "process.versions.node.split('.')[0]").Output(); err != nil {
		t.Skipf("client-compatibility suite skipped: node does not run: %v", err)
	} else if major, _ := strconv.Atoi(strings.TrimSpace(string(v))); major < 18 {
		t.Skipf("client-compatibility suite skipped: node %s is older than 18", strings.TrimSpace(string(v)))
	}
	modules := chaintest.NPMModules(t, npmBin, clientsDir, "client-suite")

	// The suite's scripts beside the installed libraries.
	work := t.TempDir()
	entries, err := os.ReadDir(clientsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mjs") || e.Name() == "Counter.json" {
			b, err := os.ReadFile(filepath.Join(clientsDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}

	bin := buildTipnode(t)
	url, stop := startDevProcess(t, bin)
	replicaURL, stopReplica := startReplicaProcess(t, bin, url)
	results, elapsed := runClientScripts(t, nodeBin, work, url, "viem,ethers,web3", "TIPNODE_REPLICA_URL="+replicaURL)
	stopReplica()
	stop()
	// viem's OP Stack support (and ethers' L1-fee estimate) against an OP
	// dev chain with an operator fee, so that every fee part is non-zero.
	opURL, stopOP := startDevProcess(t, bin, "--op", "--op.operatorfee.scalar", "7", "--op.operatorfee.constant", "1000")
	opResults, opElapsed := runClientScripts(t, nodeBin, work, opURL, "op")
	stopOP()
	t.Logf("client-compatibility suite (%s; OP Stack %s):\n%s", elapsed.Round(time.Second), opElapsed.Round(time.Second), resultTable(append(results, opResults...)))
	for _, r := range append(results, opResults...) {
		if !r.OK {
			t.Errorf("%s: %s: %s", r.Lib, r.Feature, r.Detail)
		}
	}
	// Each library must have reported every feature it has.
	for lib, want := range map[string]int{"viem": 10, "ethers": 10, "web3": 10, "viem-op": 6, "ethers-op": 1} {
		n := 0
		for _, r := range append(results, opResults...) {
			if r.Lib == lib {
				n++
			}
		}
		if n < want {
			t.Errorf("%s reported %d features, want at least %d", lib, n, want)
		}
	}
}

// runClientScripts runs `node run.mjs url libs` in work with env added and
// returns the results it printed and how long it took.
func runClientScripts(t *testing.T, nodeBin, work, url, libs string, env ...string) ([]clientResult, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, "run.mjs", url, libs)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("node run.mjs %s: %v\nstderr:\n%s\nstdout:\n%s", libs, err, tail(stderr.String(), 4000), tail(stdout.String(), 2000))
	}
	var out struct {
		Results []clientResult `json:"results"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || len(out.Results) == 0 {
		t.Fatalf("no results from run.mjs %s (%v):\n%s\nstderr:\n%s", libs, err, tail(stdout.String(), 2000), tail(stderr.String(), 2000))
	}
	return out.Results, time.Since(t0)
}

// buildTipnode builds this command into a temporary directory.
func buildTipnode(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tipnode")
	// go test puts the running toolchain's bin directory first in PATH.
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var bannerURL = regexp.MustCompile(`JSON-RPC: (http://\S+)`)
var bannerDir = regexp.MustCompile(`data directory (\S+)`)

// startDevProcess starts `tipnode dev` (with args added) on a free port and returns its URL
// (read from the banner, printed once the port is bound) and a stop
// function that interrupts it and checks it exits cleanly and removes its
// temporary data directory.
func startDevProcess(t *testing.T, bin string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"dev", "--http.addr", "127.0.0.1:0", "--log.format", "json"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := new(lockedWriter)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan [2]string, 1)
	go func() {
		var url, dir string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := bannerDir.FindStringSubmatch(sc.Text()); m != nil {
				dir = strings.TrimSuffix(m[1], ",")
			}
			if m := bannerURL.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
				found <- [2]string{url, dir}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	var url, dir string
	select {
	case v := <-found:
		url, dir = v[0], v[1]
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("tipnode dev printed no banner within 60 s; log:\n%s", tail(logs.String(), 3000))
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("tipnode dev exited with %v; log:\n%s", err, tail(logs.String(), 3000))
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("tipnode dev did not stop within 30 s of SIGINT")
		}
		if dir != "" {
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("tipnode dev left its temporary data directory %s (stat: %v)", dir, err)
			}
		}
	}
	t.Cleanup(stop)
	return url, stop
}

// startReplicaProcess starts a read replica of the dev node at devURL
// (`init --genesis-from`, then `run --follow.rpc --follow.preconf` on its
// stream) and returns its URL and a stop function.
func startReplicaProcess(t *testing.T, bin, devURL string) (string, func()) {
	t.Helper()
	dir, addr := t.TempDir(), freePort(t)
	if out, err := exec.Command(bin, "init", "--datadir", dir, "--genesis-from", devURL, "--log.level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("replica init --genesis-from: %v\n%s", err, out)
	}
	host := strings.TrimPrefix(devURL, "http://")
	p := startProcess(t, bin, "run", "--datadir", dir, "--http.addr", addr, "--follow.rpc", "ws://"+host,
		"--follow.preconf", "ws://"+host+"/preconfirmations", "--log.level", "warn", "--log.format", "json")
	url := "http://" + addr
	waitRPC(t, url, p)
	return url, p.kill
}

// resultTable formats the results as library x feature.
func resultTable(rs []clientResult) string {
	var libs, features []string
	seenLib, seenFeat := map[string]bool{}, map[string]bool{}
	cell := map[[2]string]string{}
	for _, r := range rs {
		if !seenLib[r.Lib] {
			seenLib[r.Lib] = true
			libs = append(libs, r.Lib)
		}
		if !seenFeat[r.Feature] {
			seenFeat[r.Feature] = true
			features = append(features, r.Feature)
		}
		mark := "pass"
		if !r.OK {
			mark = "FAIL"
		}
		cell[[2]string{r.Feature, r.Lib}] = mark
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "| %-85s |", "feature")
	for _, l := range libs {
		fmt.Fprintf(&sb, " %-6s |", l)
	}
	sb.WriteString("\n")
	for _, f := range features {
		fmt.Fprintf(&sb, "| %-85s |", f)
		for _, l := range libs {
			c := cell[[2]string{f, l}]
			if c == "" {
				c = "-"
			}
			fmt.Fprintf(&sb, " %-6s |", c)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// lockedWriter is a buffer written on the process's stderr-copying
// goroutine and read by the test.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
