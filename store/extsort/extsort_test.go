package extsort

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

func TestSorterOrderAndStability(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		mem  int
	}{
		{"in memory", 1000, 1 << 20},
		{"spilled", 60000, 1 << 20}, // 60k records of ~40 bytes: several runs
		{"empty", 0, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := New(dir, tc.mem)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			type kv struct {
				k []byte
				v string
				i int
			}
			var want []kv
			for i := range tc.n {
				k := []byte(fmt.Sprintf("key-%08d", rng.IntN(tc.n/2+1))) // duplicates on purpose
				v := fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte{'x'}, rng.IntN(20)))
				want = append(want, kv{k, v, i})
				if err := s.Add(k, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortStableFunc(want, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
			var got []kv
			if err := s.Merge(func(k, v []byte) error {
				got = append(got, kv{k: bytes.Clone(k), v: string(v)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d records, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i].k, want[i].k) || got[i].v != want[i].v {
					t.Fatalf("record %d: got %s=%s, want %s=%s", i, got[i].k, got[i].v, want[i].k, want[i].v)
				}
			}
			if tc.name == "spilled" && len(s.runs) < 2 {
				t.Fatalf("expected several runs, got %d", len(s.runs))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			left, _ := os.ReadDir(dir)
			if len(left) != 0 {
				t.Fatalf("Close left %d files", len(left))
			}
		})
	}
}
