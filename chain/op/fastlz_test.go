package op

import (
	"bytes"
	"math/rand"
	"testing"
)

// flzCorpus is a deterministic set of inputs covering FastLZ's edges: short
// inputs (nothing searched below 13 bytes), zero runs (long matches split
// every 262), repeats beyond the 8191-byte window, literal runs around 32,
// random and text-like data.
func flzCorpus() [][]byte {
	rng := rand.New(rand.NewSource(19))
	random := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	var c [][]byte
	for _, n := range []int{0, 1, 2, 3, 4, 12, 13, 14, 15, 16, 17, 31, 32, 33, 64} {
		c = append(c, bytes.Repeat([]byte{0}, n), random(n))
	}
	for _, n := range []int{100, 262, 263, 264, 265, 270, 524, 525, 600, 5000, 70000} {
		c = append(c, bytes.Repeat([]byte{0}, n))
	}
	for _, n := range []int{20, 31, 32, 33, 63, 64, 65, 100, 1000, 9000} {
		c = append(c, random(n))
	}
	// A block repeated within and beyond the 8192-byte window.
	blk := random(3000)
	c = append(c, bytes.Repeat(blk, 3))
	far := random(9000)
	c = append(c, append(append(append([]byte{}, far[:100]...), far...), far[:100]...))
	// Short patterns: every match length field 1..10 and literals between.
	for l := 3; l <= 12; l++ {
		p := random(l)
		c = append(c, append(append(append(random(5), p...), random(7)...), append(p, random(20)...)...))
	}
	// A 3-byte sequence seen again exactly 8191 bytes later (the farthest a
	// match may reach) and exactly 8192 bytes later (too far), with zeros
	// between so that few positions are hashed.
	for _, d := range []int{8191, 8192} {
		p := random(16)
		b := make([]byte, 2+d+40)
		copy(b[2:], p)
		copy(b[2+d:], p)
		copy(b[2+d+16:], random(24))
		c = append(c, b)
	}
	// Text-like and calldata-like data.
	c = append(c, bytes.Repeat([]byte("transfer(address,uint256) "), 40))
	cd := make([]byte, 0, 4+32*12)
	cd = append(cd, 0xa9, 0x05, 0x9c, 0xbb)
	for i := 0; i < 12; i++ {
		w := make([]byte, 32)
		copy(w[32-i-1:], random(i+1))
		cd = append(cd, w...)
	}
	c = append(c, cd)
	for i := 0; i < 20; i++ {
		n := rng.Intn(2000)
		b := random(n)
		for j := 0; j < n/10; j++ { // sprinkle zeros
			b[rng.Intn(n)] = 0
		}
		c = append(c, b)
	}
	return c
}

// flzCorpusWant are the compressed lengths of flzCorpus, computed
// independently with solady's LibZip.flzCompress (npm solady 0.1.26,
// js/solady.js), the JavaScript FastLZ the OP Stack's GasPriceOracle
// mirrors.
var flzCorpusWant = []uint64{
	0, 0, 2, 2, 3, 3, 4, 4, 5, 5, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 12, 18, 12, 32, 12,
	33, 12, 35, 12, 66, 12, 12, 12, 12, 12, 12, 15, 15, 18, 69, 813, 21, 32, 33, 35, 65, 66,
	68, 104, 1032, 9281, 3169, 9386, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 144, 158, 45,
	132, 641, 1160, 1929, 966, 2010, 1213, 470, 1820, 1539, 992, 1528, 195, 347, 1271, 114,
	46, 383, 107, 250, 1039,
}

func TestFastLZSizeCorpus(t *testing.T) {
	corpus := flzCorpus()
	if len(corpus) != len(flzCorpusWant) {
		t.Fatalf("corpus has %d inputs, %d expected lengths", len(corpus), len(flzCorpusWant))
	}
	for i, in := range corpus {
		if got := FastLZSize(in); got != flzCorpusWant[i] {
			t.Errorf("input %d (%d bytes): FastLZSize = %d, want %d", i, len(in), got, flzCorpusWant[i])
		}
	}
}

func FuzzFastLZSize(f *testing.F) {
	for _, in := range flzCorpus()[:40] {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n := FastLZSize(in)
		// Never more than the all-literals encoding.
		if max := uint64(flzLiteralsLen(len(in))); n > max {
			t.Fatalf("size %d above the literal bound %d", n, max)
		}
	})
}
