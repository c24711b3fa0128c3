package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

// The import rounds (--import-rounds N): the import alone, measured as the
// full run measures it (each node's own "done" time over a fresh copy of
// its initialised store), N times per node, the nodes alternated within
// every round and the order rotated between rounds, so that the machine's
// speed, which can move by tens of percent within minutes, weighs on every
// node alike. Each round gives one ratio per tipnode build (its Mgas/s over
// go-ethereum's in the same round); the summary is their median and
// quartiles. --import-ab adds a second tipnode build to every round (an
// A/B of two builds, each against go-ethereum and against each other).

// importEntry is one node of the import rounds.
type importEntry struct {
	name string // column: geth, tipnode, tipnode-b
	kind nodeKind
	// init is the initialised store each import starts from a copy of.
	init string
}

// importRound is one round: each node's Mgas/s and CPU time (user and
// system) of its import process.
type importRound struct {
	Order  []string                 `json:"order"`
	MgasPS map[string]float64       `json:"mgasPerSecond"`
	CPU    map[string]time.Duration `json:"cpu"`
}

// importReport is what --import-rounds writes.
type importReport struct {
	Started  time.Time          `json:"started"`
	Manifest *chaingen.Manifest `json:"chain"`
	Binaries map[string]string  `json:"binaries"`
	Rounds   []importRound      `json:"rounds"`
}

func runImports(ctx context.Context, o *options, m *chaingen.Manifest, chainDir string, log zerolog.Logger) error {
	runDir := filepath.Join(chainDir, "imports")
	if err := os.RemoveAll(runDir); err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	entries := []*importEntry{{name: "geth", kind: gethKind(o.Geth)}, {name: "tipnode", kind: tipnodeKind(o.Tipnode, false)}}
	if o.ImportAB != "" {
		entries = append(entries, &importEntry{name: "tipnode-b", kind: tipnodeKind(o.ImportAB, false)})
	}
	// The stores (go-ethereum's initialised one is about 2.5 GB on the
	// 1M-slot chain, and each import works on a copy) go when the rounds
	// end, whether they finished or not; the logs stay.
	defer func() {
		for _, e := range entries {
			if err := os.RemoveAll(e.init); err != nil {
				log.Warn().Err(err).Msg("remove an initialised store")
			}
		}
		if err := os.RemoveAll(filepath.Join(runDir, "data")); err != nil {
			log.Warn().Err(err).Msg("remove the import's store")
		}
	}()
	genesis, chainFile := filepath.Join(chainDir, chaingen.GenesisFile), filepath.Join(chainDir, chaingen.ChainFile)
	rep := &importReport{Started: time.Now(), Manifest: m, Binaries: map[string]string{}}
	for _, e := range entries {
		e.init = filepath.Join(runDir, e.name+".init")
		rep.Binaries[e.name] = e.kind.binary
		r, err := runLogged(ctx, filepath.Join(runDir, e.name+"-init.log"), e.kind.binary, e.kind.initArgs(e.init, genesis)...)
		if err != nil {
			return err
		}
		log.Info().Str("node", e.name).Str("elapsed", r.wall.Round(time.Millisecond).String()).Msg("init done")
	}
	for r := range o.ImportRounds {
		// Rotate the order: every node goes first, second, ... equally often.
		order := make([]*importEntry, len(entries))
		for i := range entries {
			order[i] = entries[(i+r)%len(entries)]
		}
		round := importRound{MgasPS: map[string]float64{}, CPU: map[string]time.Duration{}}
		for _, e := range order {
			mg, cpu, err := importOnce(ctx, e, runDir, chainFile, m.Gas)
			if err != nil {
				return err
			}
			round.Order = append(round.Order, e.name)
			round.MgasPS[e.name], round.CPU[e.name] = mg, cpu
		}
		rep.Rounds = append(rep.Rounds, round)
		ev := log.Info().Int("round", r+1)
		for _, e := range entries {
			ev = ev.Float64(e.name+" Mgas/s", round1(round.MgasPS[e.name]))
		}
		ev.Msg("import round")
	}
	out := filepath.Join(o.Cache, "results", "imports-"+time.Now().Format("20060102-150405")+".json")
	if err := writeJSON(out, rep); err != nil {
		return err
	}
	printImports(os.Stdout, rep, entryNames(entries))
	fmt.Printf("\nFull results: %s\nLogs: %s\n", out, runDir)
	return nil
}

func entryNames(es []*importEntry) []string {
	var names []string
	for _, e := range es {
		names = append(names, e.name)
	}
	return names
}

// importOnce imports chainFile into a fresh copy of e's initialised store
// and returns the Mgas/s over the node's own import time and the import
// process's CPU time.
func importOnce(ctx context.Context, e *importEntry, runDir, chainFile string, gas uint64) (float64, time.Duration, error) {
	data := filepath.Join(runDir, "data")
	if err := os.RemoveAll(data); err != nil {
		return 0, 0, err
	}
	if err := os.CopyFS(data, os.DirFS(e.init)); err != nil {
		return 0, 0, fmt.Errorf("copy of %s's initialised store: %w", e.name, err)
	}
	r, err := runLogged(ctx, filepath.Join(runDir, e.name+"-import.log"), e.kind.binary, e.kind.importArgs(data, chainFile)...)
	if err != nil {
		return 0, 0, err
	}
	own, ok := e.kind.importElapsed(r.out)
	if !ok {
		return 0, 0, fmt.Errorf("%s: no import time in its output (log %s)", e.name, filepath.Join(runDir, e.name+"-import.log"))
	}
	if own <= 0 || own > r.wall {
		return 0, 0, fmt.Errorf("%s: import time %v outside its process's %v", e.name, own, r.wall)
	}
	return float64(gas) / 1e6 / own.Seconds(), r.cpu, nil
}

// importRatios returns, per round, num's Mgas/s over den's.
func importRatios(rounds []importRound, num, den string) []float64 {
	var r []float64
	for _, rd := range rounds {
		if n, d := rd.MgasPS[num], rd.MgasPS[den]; n > 0 && d > 0 {
			r = append(r, n/d)
		}
	}
	return r
}

// cpuRatios returns, per round, num's import CPU time over den's.
func cpuRatios(rounds []importRound, num, den string) []float64 {
	var r []float64
	for _, rd := range rounds {
		if n, d := rd.CPU[num], rd.CPU[den]; n > 0 && d > 0 {
			r = append(r, float64(n)/float64(d))
		}
	}
	return r
}

// quartiles returns the lower quartile, median and upper quartile of v
// (linear interpolation between order statistics), NaN-free for len(v) > 0.
func quartiles(v []float64) (q1, med, q3 float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(p float64) float64 {
		x := p * float64(len(s)-1)
		i := int(x)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (x-float64(i))*(s[i+1]-s[i])
	}
	return at(0.25), at(0.5), at(0.75)
}

// printImports prints every round and the ratios' summary.
func printImports(w io.Writer, rep *importReport, names []string) {
	fmt.Fprintf(w, "\nImport of %s (%d blocks, %.2f Ggas), Mgas/s over each node's own import time; %d rounds, order rotated.\n",
		rep.Manifest.Config.Name(), rep.Manifest.Head, float64(rep.Manifest.Gas)/1e9, len(rep.Rounds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "round\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
	}
	for _, n := range names[1:] {
		fmt.Fprintf(tw, "%s/geth\t", n)
	}
	for _, n := range names {
		fmt.Fprintf(tw, "%s CPU-s\t", n)
	}
	fmt.Fprintln(tw)
	for i, rd := range rep.Rounds {
		fmt.Fprintf(tw, "%d\t", i+1)
		for _, n := range names {
			fmt.Fprintf(tw, "%.1f\t", rd.MgasPS[n])
		}
		for _, n := range names[1:] {
			fmt.Fprintf(tw, "%.2f\t", rd.MgasPS[n]/rd.MgasPS["geth"])
		}
		for _, n := range names {
			fmt.Fprintf(tw, "%.1f\t", rd.CPU[n].Seconds())
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w)
	pairs := [][2]string{}
	for _, n := range names[1:] {
		pairs = append(pairs, [2]string{n, "geth"})
	}
	if slices.Contains(names, "tipnode-b") {
		pairs = append(pairs, [2]string{"tipnode-b", "tipnode"})
	}
	for _, p := range pairs {
		r := importRatios(rep.Rounds, p[0], p[1])
		if len(r) == 0 {
			continue
		}
		q1, med, q3 := quartiles(r)
		fmt.Fprintf(w, "%s/%s Mgas/s: median %.2f, quartiles %.2f-%.2f, range %.2f-%.2f (%d rounds)\n",
			p[0], p[1], med, q1, q3, slices.Min(r), slices.Max(r), len(r))
		// CPU the other way round: how many times the CPU time of the
		// first node the second uses.
		if c := cpuRatios(rep.Rounds, p[1], p[0]); len(c) > 0 {
			q1, med, q3 := quartiles(c)
			fmt.Fprintf(w, "%s/%s CPU time per import: median %.2f, quartiles %.2f-%.2f, range %.2f-%.2f\n",
				p[1], p[0], med, q1, q3, slices.Min(c), slices.Max(c))
		}
	}
}
