package main

import (
	"os"
	"testing"

	"github.com/google/pprof/profile"
)

// TestPGOProfile checks default.pgo, the CPU profile `go build` optimizes
// tipnode with (make pgo regenerates it): a CPU profile whose samples
// cover every hot path the node serves, under the names the code has
// now. A renamed entry point, a missing or truncated profile, or one taken
// from a single benchmark fails here: rerun make pgo and commit the
// result.
func TestPGOProfile(t *testing.T) {
	f, err := os.Open("default.pgo")
	if err != nil {
		t.Fatalf("no profile for profile-guided optimization (make pgo writes it): %v", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("default.pgo: %v", err)
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		t.Fatalf("default.pgo is not a CPU profile: sample types %v", p.SampleType)
	}
	// Each entry point must be on the stack of at least minShare of the
	// profile's CPU time: the read path, simulation, websocket, block
	// import, pre-confirmation and the replica.
	const minShare = 0.005
	hot := []string{
		"github.com/ethereum/go-ethereum/core/vm.(*EVM).execUntraced",
		"github.com/tipnode/tipnode/rpc.(*Server).run",
		"github.com/tipnode/tipnode/rpc.(*wsConn).readLoop",
		"github.com/tipnode/tipnode/rpc/eth.(*API).ethCall",
		"github.com/tipnode/tipnode/rpc/eth.(*API).getStorageAt",
		"github.com/tipnode/tipnode/rpc/eth.(*API).simulateV1",
		"github.com/tipnode/tipnode/store.(*stateReader).Storage",
		"github.com/tipnode/tipnode/chain.(*Writer).loop",
		"github.com/tipnode/tipnode/pending/sequencer.(*Sequencer).preconfirm",
		"github.com/tipnode/tipnode/pending/replica.(*Driver).apply",
	}
	var total int64
	on := make(map[string]int64, len(hot))
	for _, s := range p.Sample {
		v := s.Value[cpu]
		total += v
		seen := make(map[string]bool)
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil && !seen[line.Function.Name] {
					seen[line.Function.Name] = true
					on[line.Function.Name] += v
				}
			}
		}
	}
	if total == 0 {
		t.Fatal("default.pgo holds no CPU samples")
	}
	for _, fn := range hot {
		if share := float64(on[fn]) / float64(total); share < minShare {
			t.Errorf("%s is on %.2f%% of default.pgo's CPU time, want at least %.1f%% (renamed, or the profile is stale: make pgo)", fn, 100*share, 100*minShare)
		}
	}
}
