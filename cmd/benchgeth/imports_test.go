package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tipnode/tipnode/cmd/benchgeth/chaingen"
)

func TestQuartiles(t *testing.T) {
	for _, tc := range []struct {
		v           []float64
		q1, med, q3 float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{2, 4}, 2.5, 3, 3.5},
		{[]float64{5, 1, 3, 2, 4}, 2, 3, 4},
		{[]float64{1, 2, 3, 4}, 1.75, 2.5, 3.25},
	} {
		q1, med, q3 := quartiles(tc.v)
		if math.Abs(q1-tc.q1) > 1e-9 || math.Abs(med-tc.med) > 1e-9 || math.Abs(q3-tc.q3) > 1e-9 {
			t.Errorf("quartiles(%v) = %v %v %v, want %v %v %v", tc.v, q1, med, q3, tc.q1, tc.med, tc.q3)
		}
	}
}

// TestPrintImports: each round's ratio is taken within the round, and the
// summary is over those ratios (not a ratio of medians).
func TestPrintImports(t *testing.T) {
	rep := &importReport{
		Manifest: &chaingen.Manifest{Config: chaingen.QuickConfig(), Head: 30, Gas: 2e9},
		Rounds: []importRound{
			{MgasPS: map[string]float64{"geth": 100, "tipnode": 300, "tipnode-b": 330}, CPU: map[string]time.Duration{"geth": 40 * time.Second, "tipnode": 10 * time.Second}},
			{MgasPS: map[string]float64{"geth": 50, "tipnode": 200, "tipnode-b": 180}, CPU: map[string]time.Duration{"geth": 30 * time.Second, "tipnode": 15 * time.Second}},
			{MgasPS: map[string]float64{"geth": 120, "tipnode": 240, "tipnode-b": 264}, CPU: map[string]time.Duration{"geth": 36 * time.Second, "tipnode": 12 * time.Second}},
		},
	}
	var out bytes.Buffer
	printImports(&out, rep, []string{"geth", "tipnode", "tipnode-b"})
	for _, want := range []string{
		"tipnode/geth Mgas/s: median 3.00, quartiles 2.50-3.50, range 2.00-4.00 (3 rounds)",
		"tipnode-b/geth Mgas/s: median 3.30, quartiles 2.75-3.45, range 2.20-3.60 (3 rounds)",
		"tipnode-b/tipnode Mgas/s: median 1.10, quartiles 1.00-1.10, range 0.90-1.10 (3 rounds)",
		"geth/tipnode CPU time per import: median 3.00, quartiles 2.50-3.50, range 2.00-4.00",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

func TestImportFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--import-rounds", "-1"},
		{"--import-ab", "/bin/sh"},
		{"--import-rounds", "3", "--import-ab", "/nonexistent"},
		{"--import-rounds", "3", "--nodes", "tipnode", "--tipnode", "/bin/sh"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	o, err := parseFlags([]string{"--import-rounds", "3", "--import-ab", "/bin/sh", "--geth", "/bin/sh", "--tipnode", "/bin/sh"})
	if err != nil || o.ImportRounds != 3 || o.ImportAB != "/bin/sh" {
		t.Fatalf("%+v %v", o, err)
	}
}
