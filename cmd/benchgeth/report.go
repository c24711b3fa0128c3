package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

// printReport writes the run's tables: the workloads, then the nodes.
func printReport(out io.Writer, rep *report, workloads []chaingen.Workload) {
	m := rep.Manifest
	c := m.Config
	fmt.Fprintf(out, "\n## tipnode vs go-ethereum v1.17.8 (archive, hash scheme)\n\n")
	fmt.Fprintf(out, "Chain: %d genesis slots (%d tokens x %d holders + senders), %d blocks x %d txs = %d txs, %.1f Mgas, %d new holders; head %d.\n",
		m.GenesisSlots, c.Tokens, c.HoldersPerToken(), c.Blocks, c.TxsPerBlock, m.Txs, float64(m.Gas)/1e6, m.NewHolders, m.Head)
	fmt.Fprintf(out, "Client on CPU %s, both nodes on CPU %s. Saturation: closed loop, %d connections, %v. Latency: open loop at the rate shown "+
		"(%v; HdrHistogram, from the intended send time). Each in %d round(s), nodes alternating. tipnode --sequencer: %v.\n",
		rep.ClientCPU, rep.ServerCPU, rep.Load.Connections, rep.SatTime, rep.Load.Duration, rep.Rounds, rep.Sequencer)
	if rep.TipnodeArgs != "" {
		fmt.Fprintf(out, "tipnode ran with the extra flags: %s\n", rep.TipnodeArgs)
	}
	if rep.TipnodeEnv != "" {
		fmt.Fprintf(out, "tipnode ran with the extra environment: %s\n", rep.TipnodeEnv)
	}
	if rep.Unpinned {
		fmt.Fprintf(out, "Unpinned: the load generator and both nodes share every CPU; max rps is the whole machine's answer rate and noise %% includes the load generator.\n")
	}
	fmt.Fprintf(out, "CPU = server CPU time (/proc utime+stime) per answered request; batch100 counts one batch as one request. ratio = tipnode / geth.\n\n")

	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\tnode\tmax rps\tCPU µs/req\trate\tp50 ms\tp99 ms\tCPU µs/req @rate\tfailed\tnoise %\tclient lag p99 ms\t")
	for _, w := range workloads {
		var wr *workloadResult
		for i := range rep.Workloads {
			if rep.Workloads[i].Name == w.Name {
				wr = &rep.Workloads[i]
			}
		}
		if wr == nil {
			continue
		}
		for _, name := range rep.nodeList() {
			s, o := wr.Sat[name], wr.Open[name]
			mark := ""
			if s.ClientLoad > 0.9 {
				mark = "*"
			}
			noise := max(s.ServerNoise, o.ServerNoise)
			fmt.Fprintf(tw, "%s\t%s\t%.0f%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.0f\t%s\t%.0f\t%.2f\t\n", w.Name, name, s.RPS, mark, micros(s.CPUPerReq), wr.Rate,
				millis(o.P50), millis(o.P99), micros(o.CPUPerReq), failures(s, o), noise*100, millis(o.QueueP99))
		}
		g, t := wr.Sat["geth"], wr.Sat["tipnode"]
		og, ot := wr.Open["geth"], wr.Open["tipnode"]
		fmt.Fprintf(tw, "%s\tratio\t%s\t%s\t\t%s\t%s\t%s\t\t\t\t\n", w.Name, ratio(t.RPS, g.RPS), ratio(micros(t.CPUPerReq), micros(g.CPUPerReq)),
			ratio(millis(ot.P50), millis(og.P50)), ratio(millis(ot.P99), millis(og.P99)), ratio(micros(ot.CPUPerReq), micros(og.CPUPerReq)))
	}
	tw.Flush()
	fmt.Fprintln(out, "\n* the client's core was >90% busy: the rate may be client-bound (the CPU per request is still the server's).")
	fmt.Fprintln(out, "noise %: the most CPU other processes (the idle other node included) took on the server's core during the node's two runs; with noise, max rps")
	fmt.Fprintln(out, "  falls but CPU µs/req stays comparable. client lag: how late the open-loop client sent requests (its own queueing, part of the latency).")

	printFeed(out, rep, workloads)
	printProfiles(out, rep, workloads)

	fmt.Fprintf(out, "\n### Nodes\n\n")
	tw = tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "node\tinit s\timport s\timport Mgas/s\tstore MiB\tstartup s\tsettle s\tRSS at rest MiB\tidle CPU %\t")
	for _, name := range rep.nodeList() {
		f := rep.Nodes[name]
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.0f\t%.2f\t%.1f\t%.0f\t%.1f\t\n", name, f.Init.Seconds(), f.ImportOwn.Seconds(), f.ImportMgasPS,
			float64(f.StoreBytes)/(1<<20), f.Startup.Seconds(), f.Settle.Seconds(), float64(f.RSSAtRest)/(1<<20), f.IdleCPU*100)
	}
	g, t := rep.Nodes["geth"], rep.Nodes["tipnode"]
	fmt.Fprintf(tw, "ratio\t%s\t%s\t%s\t%s\t%s\t\t%s\t\t\n", ratio(t.Init.Seconds(), g.Init.Seconds()), ratio(t.ImportOwn.Seconds(), g.ImportOwn.Seconds()),
		ratio(t.ImportMgasPS, g.ImportMgasPS), ratio(float64(t.StoreBytes), float64(g.StoreBytes)), ratio(t.Startup.Seconds(), g.Startup.Seconds()),
		ratio(float64(t.RSSAtRest), float64(g.RSSAtRest)))
	tw.Flush()
	fmt.Fprintln(out, "\nimport s: as the node reports it (go-ethereum: \"Import done in\", without compaction; tipnode: \"import done\"); Mgas/s over that time.")
	if g.ImportBlocks > 0 {
		fmt.Fprintf(out, "go-ethereum's own block-processing reports (\"Imported new chain segment\", without its snapshot generation) add up to %.1f s: %.1f Mgas/s.\n",
			g.ImportBlocks.Seconds(), g.BlocksMgasPS)
	}
	fmt.Fprintln(out, "startup: from exec to the first eth_blockNumber answer at the chain head; settle: until the node stays under 5% CPU for 2 s.")

	var diff []string
	for _, w := range workloads {
		if v := rep.Agreement[w.Name]; v != agreeSame && v != agreeSkipped {
			diff = append(diff, fmt.Sprintf("  %s: %s", w.Name, v))
		}
	}
	if len(diff) == 0 {
		fmt.Fprintf(out, "\nAgreement: both nodes gave the same answers to the first %d requests of every workload (blocknumber skipped).\n", agreeLines)
	} else {
		fmt.Fprintf(out, "\nAgreement: the nodes answered differently:\n%s\n", strings.Join(diff, "\n"))
	}
	var fails []string
	for _, wr := range rep.Workloads {
		for _, name := range rep.nodeList() {
			for phase, s := range map[string]summary{"saturation": wr.Sat[name], "open loop": wr.Open[name]} {
				for k, v := range s.Failures {
					fails = append(fails, fmt.Sprintf("  %s %s %s: %d x %s (%s)", wr.Name, name, phase, v.Count, k, v.Example))
				}
			}
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(out, "\nFailures:\n%s\n", strings.Join(fails, "\n"))
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func failures(s, o summary) string {
	if s.Failed == 0 && o.Failed == 0 {
		return "0"
	}
	return fmt.Sprintf("%d+%d", s.Failed, o.Failed)
}

// printFeed writes the table of the fed workloads (tipnode only): CPU per
// request, the pending / latest ratio and the open-loop p99 split around
// snapshot swaps.
func printFeed(out io.Writer, rep *report, workloads []chaingen.Workload) {
	rows := rowsWith(rep, workloads, func(wr *workloadResult) bool { return wr.Feed != nil })
	if len(rows) == 0 {
		return
	}
	win := rows[0].Feed.Window
	fmt.Fprintf(out, "\n### tipnode pending vs latest, fed %.0f tx/s (geth not fed)\n\n", rep.FeedRate)
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintf(tw, "workload\tCPU µs/req\tpending/latest\tlatest in turn µs/req\tpending/latest in turn\tswaps\tswap gap ms\ttxs/block\tp99 ms\tp99 ≤%v after swap\tp99 ≤%v before swap\tp99 ≤%v after seal\tp99 ≤%v before seal\tp99 rest\tp99 ≤%v before mid-interval\trefused\t\n", win, win, win, win, win)
	for _, wr := range rows {
		f := wr.Feed
		r := "-"
		if f.CPURatio > 0 {
			r = fmt.Sprintf("%.3f", f.CPURatio)
		}
		inTurn, rt := "-", "-"
		if f.CPURatioInTurn > 0 {
			inTurn, rt = fmt.Sprintf("%.1f", micros(f.LatestCPUInTurn)), fmt.Sprintf("%.3f", f.CPURatioInTurn)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%d\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", wr.Name, micros(wr.Sat["tipnode"].CPUPerReq), r, inTurn, rt,
			f.Swaps, millis(f.SwapGap), f.TxsPerBlock, millis(f.P99), splitCell(f.AfterSwap), splitCell(f.BeforeSwap), splitCell(f.AfterSeal), splitCell(f.BeforeSeal), splitCell(f.Rest), splitCell(f.Mid), f.Refused)
	}
	tw.Flush()
	fmt.Fprintln(out, "CPU: saturation, as above, with the feed running (the feed's own CPU is in both rows). in turn: the latest counterpart measured right")
	fmt.Fprintln(out, "after each saturation round of the pending workload (the steadier ratio on a shared machine). p99 cells: ms (requests).")
	fmt.Fprintln(out, "before mid-interval: a part of the rest as large as before swap, where nothing happens; its p99 over the rest's is how far")
	fmt.Fprintln(out, "the before-swap ratio moves by chance.")
}

func splitCell(s split) string {
	if s.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%d)", millis(s.P99), s.N)
}

// printProfiles writes the table of tipnode's profiled runs (--profile).
func printProfiles(out io.Writer, rep *report, workloads []chaingen.Workload) {
	rows := rowsWith(rep, workloads, func(wr *workloadResult) bool { return wr.Profile != nil })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(out, "\n### tipnode profiled (--profile: mutex 1/%d, block 1 per %d ns; not in the table above)\n\n", profileMutexFraction, profileBlockRate)
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\trps\tCPU µs/req\tmutex wait %\tlock wait %\tchannel wait %\ttop mutex\ttop lock wait\ttop channel wait\t")
	for _, wr := range rows {
		p := wr.Profile
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.2f\t%.2f\t%.1f\t%s\t%s\t%s\t\n", wr.Name, p.RPS, micros(p.CPUPerReq),
			100*p.share(p.MutexWait), 100*p.share(p.LockWait), 100*p.share(p.ChanWait), dash(p.TopMutex), dash(p.TopLock), dash(p.TopChan))
	}
	tw.Flush()
	fmt.Fprintln(out, "wait %: time waited / (seconds x connections), i.e. the share of the requests' wall time. mutex: contention on sync.Mutex/RWMutex")
	fmt.Fprintln(out, "  (the holders' stacks, any goroutine); lock and channel: request goroutines blocked in package sync, and on channels or select")
	fmt.Fprintln(out, "  (the execution limiter's queue for a core is a channel wait). Profiles (go tool pprof) are in the run directory's profiles/.")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printCompare writes tipnode's figures in rep against those of an earlier
// run base (another chain size, another build): CPU per request of every
// workload both ran, and the node facts.
func printCompare(out io.Writer, rep, base *report, basePath string, workloads []chaingen.Workload) {
	fmt.Fprintf(out, "\n### tipnode here vs %s (%d genesis slots there, %d here)\n\n", basePath, base.Manifest.GenesisSlots, rep.Manifest.GenesisSlots)
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\tCPU µs/req there\there\tratio\tgeth there\tgeth here\tgeth ratio\t")
	byName := map[string]*workloadResult{}
	for i := range base.Workloads {
		byName[base.Workloads[i].Name] = &base.Workloads[i]
	}
	for _, w := range workloads {
		var here *workloadResult
		for i := range rep.Workloads {
			if rep.Workloads[i].Name == w.Name {
				here = &rep.Workloads[i]
			}
		}
		there := byName[w.Name]
		if here == nil || there == nil {
			continue
		}
		t0, t1 := micros(there.Sat["tipnode"].CPUPerReq), micros(here.Sat["tipnode"].CPUPerReq)
		g0, g1 := micros(there.Sat["geth"].CPUPerReq), micros(here.Sat["geth"].CPUPerReq)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%s\t\n", w.Name, t0, t1, ratio(t1, t0), g0, g1, ratio(g1, g0))
	}
	tw.Flush()
	tb, th := base.Nodes["tipnode"], rep.Nodes["tipnode"]
	gb, gh := base.Nodes["geth"], rep.Nodes["geth"]
	tw = tabwriter.NewWriter(out, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "\nnode\tfact\tthere\there\tratio\t")
	row := func(node, fact string, a, b float64, unit string) {
		fmt.Fprintf(tw, "%s\t%s\t%.2f %s\t%.2f %s\t%s\t\n", node, fact, a, unit, b, unit, ratio(b, a))
	}
	for _, n := range []struct {
		name        string
		there, here nodeFacts
	}{{"tipnode", tb, th}, {"geth", gb, gh}} {
		row(n.name, "init + import", (n.there.Init + n.there.ImportWall).Seconds(), (n.here.Init + n.here.ImportWall).Seconds(), "s")
		row(n.name, "store", float64(n.there.StoreBytes)/(1<<20), float64(n.here.StoreBytes)/(1<<20), "MiB")
		row(n.name, "RSS at rest", float64(n.there.RSSAtRest)/(1<<20), float64(n.here.RSSAtRest)/(1<<20), "MiB")
		row(n.name, "startup", n.there.Startup.Seconds(), n.here.Startup.Seconds(), "s")
	}
	tw.Flush()
	fmt.Fprintln(out, "init + import: wall time of both commands. CPU: saturation CPU per request as in the main table.")
}

// rowsWith lists rep's results of workloads, in table order, that have.
func rowsWith(rep *report, workloads []chaingen.Workload, have func(*workloadResult) bool) []*workloadResult {
	var rows []*workloadResult
	for _, w := range workloads {
		for i := range rep.Workloads {
			if rep.Workloads[i].Name == w.Name && have(&rep.Workloads[i]) {
				rows = append(rows, &rep.Workloads[i])
			}
		}
	}
	return rows
}
