package main

// The dependency rule of docs/architecture.md, checked on the module's real
// package graph: cmd -> rpc/node -> rpc/eth -> {rpc, pending, chain} ->
// store, migrations -> store; rpc (the transport) imports none of our
// packages and only rpc/eth, rpc/node and cmd import it; store imports only
// its own sub-packages.

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

const modulePath = "github.com/tipnode/tipnode"

// layer is the rank of a package of the module: a package may import only
// packages of its own rank or below (Go itself forbids cycles within a
// rank). Unknown top-level folders have no rank and fail the check.
func layer(pkg string) (int, bool) {
	top, _, _ := strings.Cut(pkg, "/")
	switch {
	case pkg == "rpc" || strings.HasPrefix(pkg, "rpc/rpctest"):
		return 0, true // the transport (and its test support): imports none of ours
	case top == "store":
		return 1, true
	case top == "chain", top == "migrations":
		return 2, true
	case top == "pending":
		return 3, true
	case pkg == "rpc/eth" || strings.HasPrefix(pkg, "rpc/eth/"):
		return 4, true
	case pkg == "rpc/node" || strings.HasPrefix(pkg, "rpc/node/"):
		return 5, true
	case top == "cmd":
		return 6, true
	}
	return 0, false
}

// layerViolations returns the import edges (package -> imports, module
// paths without the module prefix) that break the dependency rule.
func layerViolations(graph map[string][]string) []string {
	var bad []string
	for pkg, imports := range graph {
		from, ok := layer(pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: not in any layer (no new top-level folders)", pkg))
			continue
		}
		for _, imp := range imports {
			to, ok := layer(imp)
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s -> %s: not in any layer", pkg, imp))
			case pkg == "rpc" || strings.HasPrefix(pkg, "rpc/rpctest"):
				bad = append(bad, fmt.Sprintf("%s -> %s: the transport imports none of our packages", pkg, imp))
			case (imp == "rpc" || strings.HasPrefix(imp, "rpc/rpctest")) && from < 4:
				bad = append(bad, fmt.Sprintf("%s -> %s: only rpc/eth, rpc/node and cmd use the transport", pkg, imp))
			case from == 1 && !strings.HasPrefix(imp, "store"):
				bad = append(bad, fmt.Sprintf("%s -> %s: store imports only its own sub-packages", pkg, imp))
			case to > from:
				bad = append(bad, fmt.Sprintf("%s -> %s: imports upwards", pkg, imp))
			}
		}
	}
	return bad
}

// moduleGraph lists every package of the module with the module packages it
// imports (non-test code), as `go list` reports them.
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-pgo=off", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, modulePath+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	graph := make(map[string][]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg, ok := strings.CutPrefix(fields[0], modulePath+"/")
		if !ok {
			t.Fatalf("go list: package %q outside the module", fields[0])
		}
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	return graph
}

func TestPackageLayers(t *testing.T) {
	graph := moduleGraph(t)
	for _, want := range []string{"rpc", "rpc/eth", "rpc/node", "pending", "chain", "store", "migrations", "cmd/tipnode"} {
		if _, ok := graph[want]; !ok {
			t.Fatalf("go list did not report package %s: %v", want, graph)
		}
	}
	for _, v := range layerViolations(graph) {
		t.Error(v)
	}
}

// TestLayerViolations shows that the rule catches each kind of bad edge.
func TestLayerViolations(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		bad      bool
	}{
		{"cmd/tipnode", "rpc/node", false},
		{"rpc/node", "pending/replica", false},
		{"rpc/eth", "rpc", false},
		{"rpc/eth", "chain/op", false},
		{"pending", "chain", false},
		{"pending/stream", "pending", false},
		{"chain/remotestate", "chain/follow", false},
		{"migrations", "store", false},
		{"store", "store/chaintypes", false},
		{"rpc", "store/chaintypes", true},   // the transport imports none of ours
		{"store", "chain/op", true},         // store imports only store/...
		{"chain", "pending", true},          // upwards
		{"chain/follow", "rpc/eth", true},   // upwards
		{"pending", "rpc", true},            // the transport is for rpc/eth, rpc/node, cmd
		{"rpc/eth", "rpc/node", true},       // upwards
		{"rpc/node", "cmd/tipnode", true},   // nothing imports cmd
		{"tools/x", "store", true},          // no new top-level folders
		{"pending/replica", "util/x", true}, // unknown import
	} {
		got := len(layerViolations(map[string][]string{tc.from: {tc.to}})) > 0
		if got != tc.bad {
			t.Errorf("%s -> %s: violation %v, want %v", tc.from, tc.to, got, tc.bad)
		}
	}
}
