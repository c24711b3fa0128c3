package main

// The documentation checked against the binary, so that README.md,
// DEVELOPERS.md and docs/ cannot drift from it: every tipnode command line
// they show uses a command and flags that exist, every flag named anywhere
// is a flag of tipnode (or of cmd/benchgeth, or of the other tools the docs
// show), every `make` target exists, every relative link resolves, and the
// README's walkthrough and import commands run against a built binary with
// the answers the README prints.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/tipnode/tipnode/chain/chaintest"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// docFile is one documentation file and its text.
type docFile struct {
	path string // relative to the repository root
	text string
}

// docFiles reads README.md, DEVELOPERS.md and docs/*.md.
func docFiles(t *testing.T) []docFile {
	t.Helper()
	paths := []string{"README.md", "DEVELOPERS.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md found")
	}
	for _, p := range more {
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, rel)
	}
	var files []docFile
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, docFile{p, string(b)})
	}
	return files
}

// codeBlock is one fenced code block of a document.
type codeBlock struct {
	line    int    // line number of its first line of code
	heading string // the last heading before it
	lines   []string
}

// codeBlocks returns the fenced (```) blocks of a markdown text.
func codeBlocks(text string) []codeBlock {
	var (
		blocks  []codeBlock
		cur     *codeBlock
		heading string
	)
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```") && cur == nil:
			cur = &codeBlock{line: i + 2, heading: heading}
		case strings.HasPrefix(trimmed, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return blocks
}

// commandFlags returns the flags of each tipnode command, from the
// commands' own -h output (the flag sets the binary parses).
func commandFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	flagLine := regexp.MustCompile(`^  -([a-z0-9][a-z0-9.-]*)`)
	out := make(map[string]map[string]bool)
	for _, c := range commands() {
		var stderr bytes.Buffer
		err := c.run(context.Background(), []string{"-h"}, io.Discard, &stderr)
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("tipnode %s -h: %v, want flag.ErrHelp", c.name, err)
		}
		out[c.name] = make(map[string]bool)
		for _, line := range strings.Split(stderr.String(), "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				out[c.name][m[1]] = true
			}
		}
		if len(out[c.name]) == 0 {
			t.Fatalf("tipnode %s -h listed no flags:\n%s", c.name, stderr.String())
		}
	}
	return out
}

// benchgethFlags returns the flags cmd/benchgeth defines (read from its
// source: it is another main package).
func benchgethFlags(t *testing.T) map[string]bool {
	t.Helper()
	def := regexp.MustCompile(`fs\.[A-Za-z0-9]+\(\s*(?:&[^,]+,\s*)?"([a-z0-9.-]+)"`)
	files, err := filepath.Glob(filepath.Join(repoRoot, "cmd", "benchgeth", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
	}
	if !out["workloads"] || !out["unpinned"] {
		t.Fatalf("cmd/benchgeth's flags not found in its source (got %v)", out)
	}
	return out
}

// otherToolFlags are flags of the other tools the docs show (geth, cast,
// anvil), with the tool that has them.
var otherToolFlags = map[string]string{
	"cache.preimages": "geth", "http.api": "geth", "ws.api": "geth", "state.scheme": "geth",
	"gcmode": "geth", "nocompaction": "geth", "iterative": "geth dump", "op-network": "op-geth", "rollup.superchain-upgrades": "op-geth",
	"rpc-url": "cast", "async": "cast", "private-key": "cast", "value": "cast", "block": "cast",
	"fork-url": "anvil", "include": "grep",
}

// docFlag matches a --flag (or a --prefix.* family) where a word starts.
var docFlag = regexp.MustCompile("(?:^|[\\s`(\\[\"'=])--([a-z][a-z0-9-]*(?:\\.[a-z0-9-]+)*)(\\.\\*)?")

// TestDocsFlagsExist: every --flag the documentation names is a flag of a
// tipnode command, of cmd/benchgeth, or of another tool the docs show; a
// --prefix.* family names at least one tipnode flag.
func TestDocsFlagsExist(t *testing.T) {
	known := make(map[string]bool)
	for _, flags := range commandFlags(t) {
		for f := range flags {
			known[f] = true
		}
	}
	for f := range benchgethFlags(t) {
		known[f] = true
	}
	for f := range otherToolFlags {
		known[f] = true
	}
	checked := 0
	for _, d := range docFiles(t) {
		for i, line := range strings.Split(d.text, "\n") {
			for _, m := range docFlag.FindAllStringSubmatch(line, -1) {
				name, family := m[1], m[2] != ""
				checked++
				if family {
					if !slices.ContainsFunc(slices.Collect(mapKeys(known)), func(f string) bool { return strings.HasPrefix(f, name+".") }) {
						t.Errorf("%s:%d: --%s.* names no flag", d.path, i+1, name)
					}
					continue
				}
				if !known[name] {
					t.Errorf("%s:%d: --%s is not a flag of tipnode, cmd/benchgeth or the other tools the docs show", d.path, i+1, name)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d flags found in the docs: the extraction is broken", checked)
	}
}

func mapKeys(m map[string]bool) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// synopsisText is where a synopsis line's description starts: three or
// more spaces, then a word.
var synopsisText = regexp.MustCompile(`\s{3,}[a-z]`)

// tipnodeLine is one tipnode command line of a code block.
type tipnodeLine struct {
	where   string // file:line
	command string
	flags   []string
}

// tipnodeLines returns the tipnode command lines of the docs' code blocks
// (continuation lines joined; `make run ARGS='…'` counts as `tipnode dev`).
func tipnodeLines(t *testing.T) []tipnodeLine {
	t.Helper()
	var out []tipnodeLine
	for _, d := range docFiles(t) {
		for _, b := range codeBlocks(d.text) {
			for i := 0; i < len(b.lines); i++ {
				line, at := b.lines[i], b.line+i
				for strings.HasSuffix(strings.TrimSpace(line), "\\") && i+1 < len(b.lines) {
					i++
					line = strings.TrimSuffix(strings.TrimSpace(line), "\\") + " " + b.lines[i]
				}
				if c, _, ok := strings.Cut(line, "#"); ok && !strings.Contains(c, "'") {
					line = c // a shell comment (not inside ARGS='…')
				}
				if loc := synopsisText.FindStringIndex(line); loc != nil {
					line = line[:loc[0]] // a synopsis line's description
				}
				fields := strings.Fields(line)
				var cmd string
				var rest []string
				switch {
				case len(fields) >= 2 && (fields[0] == "tipnode" || fields[0] == "bin/tipnode" || fields[0] == "./bin/tipnode"):
					cmd, rest = fields[1], fields[2:]
				case len(fields) >= 2 && fields[0] == "make" && fields[1] == "run":
					cmd, rest = "dev", fields[2:]
				default:
					continue
				}
				var flags []string
				for _, f := range rest {
					for _, m := range docFlag.FindAllStringSubmatch(" "+f, -1) {
						flags = append(flags, m[1])
					}
				}
				out = append(out, tipnodeLine{fmt.Sprintf("%s:%d", d.path, at), cmd, flags})
			}
		}
	}
	return out
}

// TestDocsCommandLines: every tipnode command line the docs show names a
// command of the binary and only flags that command takes.
func TestDocsCommandLines(t *testing.T) {
	flags := commandFlags(t)
	lines := tipnodeLines(t)
	if len(lines) < 15 {
		t.Fatalf("only %d tipnode command lines found in the docs: the extraction is broken", len(lines))
	}
	for _, l := range lines {
		cmdFlags, ok := flags[l.command]
		if !ok {
			t.Errorf("%s: tipnode %s is not a command", l.where, l.command)
			continue
		}
		for _, f := range l.flags {
			if !cmdFlags[f] {
				t.Errorf("%s: tipnode %s has no flag --%s", l.where, l.command, f)
			}
		}
	}
}

// TestDocsMakeTargets: every `make TARGET` the docs name is a target of the
// Makefile.
func TestDocsMakeTargets(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := make(map[string]bool)
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+):`).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	inProse := regexp.MustCompile("`make ([a-z][a-z0-9-]*)")
	inCode := regexp.MustCompile(`^\s*make ([a-z][a-z0-9-]*)`)
	n := 0
	for _, d := range docFiles(t) {
		code := false
		for i, line := range strings.Split(d.text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				code = !code
				continue
			}
			use := inProse
			if code {
				use = inCode
			}
			for _, m := range use.FindAllStringSubmatch(line, -1) {
				n++
				if !targets[m[1]] {
					t.Errorf("%s:%d: make %s: no such target in the Makefile", d.path, i+1, m[1])
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d make commands found in the docs", n)
	}
}

// TestDocsLinks: every relative link of the docs names an existing file,
// and every #anchor a heading of the file it points to.
func TestDocsLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := make(map[string]map[string]bool) // file -> anchors
	files := docFiles(t)
	for _, d := range files {
		anchors[d.path] = headingAnchors(d.text)
	}
	for _, d := range files {
		for i, line := range strings.Split(d.text, "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				resolved := d.path
				if file != "" {
					resolved = filepath.Clean(filepath.Join(filepath.Dir(d.path), file))
					if _, err := os.Stat(filepath.Join(repoRoot, resolved)); err != nil {
						t.Errorf("%s:%d: link %s: %v", d.path, i+1, target, err)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if a, ok := anchors[resolved]; !ok || !a[anchor] {
					t.Errorf("%s:%d: link %s: no heading with anchor #%s in %s", d.path, i+1, target, anchor, resolved)
				}
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives a markdown text's
// headings: lower case, punctuation dropped, spaces to hyphens.
func headingAnchors(text string) map[string]bool {
	out := make(map[string]bool)
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var sb strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				sb.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				sb.WriteRune(r)
			}
		}
		out[sb.String()] = true
	}
	return out
}

// readmeBlock returns the first code block of README.md under the heading
// that starts with prefix.
func readmeBlock(t *testing.T, prefix string) codeBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cb := range codeBlocks(string(b)) {
		if strings.HasPrefix(cb.heading, prefix) {
			return cb
		}
	}
	t.Fatalf("README.md has no code block under a heading %q", prefix)
	return codeBlock{}
}

// TestREADMECommands runs what the README shows against a built binary:
// `make run`'s command (`tipnode dev`, as the Makefile runs it) with the
// walkthrough's curl commands, whose answers must be the ones the README
// prints; and, when the conformance data is present, the init / import /
// run commands of "A node of an existing chain".
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the process test")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: skipping the README's shell commands", tool)
		}
	}
	bin := buildTipnode(t)

	t.Run("walkthrough", func(t *testing.T) {
		mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(mk), "./$(BIN) dev $(if $(DATADIR),--datadir $(DATADIR)) $(ARGS)") {
			t.Fatal("make run no longer runs `tipnode dev [--datadir DIR] ARGS`: update this test and the README")
		}
		addr := freePort(t)
		url := "http://" + addr
		// make run DATADIR=… ARGS='--http.addr …' (a data directory of the
		// test's: a killed node cannot delete its temporary one).
		p := startProcess(t, bin, "dev", "--datadir", t.TempDir(), "--http.addr", addr)
		waitRPC(t, url, p)

		block := readmeBlock(t, "Walkthrough")
		script := strings.ReplaceAll(strings.Join(block.lines, "\n"), "http://127.0.0.1:8545", url)
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "bash", "-eu", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("the walkthrough failed: %v\n%s\nnode:\n%s", err, out, p.out.String())
		}
		// Every complete answer the README prints (`# {"jsonrpc"…}`, not
		// the abbreviated ones with "...") comes out, in order.
		rest := string(out)
		want := 0
		for _, line := range block.lines {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, `# {"jsonrpc"`) || strings.Contains(line, "...") {
				continue
			}
			answer := strings.TrimPrefix(line, "# ")
			answer = answer[:strings.LastIndex(answer, "}")+1]
			want++
			i := strings.Index(rest, answer)
			if i < 0 {
				t.Fatalf("the walkthrough did not print %s (in order); it printed:\n%s", answer, out)
			}
			rest = rest[i+len(answer):]
		}
		if want < 4 {
			t.Fatalf("only %d printed answers found in the walkthrough", want)
		}
	})

	t.Run("import", func(t *testing.T) {
		conf := chaintest.Dir(t)
		dir := t.TempDir()
		block := readmeBlock(t, "A node of an existing chain")
		var ran []string
		var serve []string
		for _, line := range block.lines {
			line, _, _ = strings.Cut(line, "#")
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "bin/tipnode" {
				continue
			}
			args := fields[1:]
			for i, a := range args {
				switch {
				case a == "/tmp/tn":
					args[i] = dir
				case strings.HasPrefix(a, "../shared/conformance/"):
					args[i] = filepath.Join(conf, strings.TrimPrefix(a, "../shared/conformance/"))
				}
			}
			if args[0] == "run" {
				serve = args
				continue
			}
			cmd := exec.Command(bin, args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tipnode %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			ran = append(ran, args[0])
		}
		if !slices.Equal(ran, []string{"init", "import"}) || serve == nil {
			t.Fatalf("the README's block ran %v and served %v: expected init, import, then run", ran, serve)
		}
		addr := freePort(t)
		url := "http://" + addr
		p := startProcess(t, bin, append(serve, "--http.addr", addr)...)
		waitRPC(t, url, p)
		var head struct {
			Hash common.Hash `json:"hash"`
		}
		if err := rpcCall(url, "eth_getBlockByNumber", &head, "latest", false); err != nil {
			t.Fatal(err)
		}
		if head.Hash != common.HexToHash(chaintest.HeadHash) {
			t.Fatalf("after the README's import the head is %s, want the conformance chain's %s", head.Hash, chaintest.HeadHash)
		}
	})
}
