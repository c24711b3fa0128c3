package op

// FastLZ (level 1) compressed length, the size estimate of the Fjord L1 cost
// function and of Jovian's DA footprint. The spec defines it as the length
// fastlz_compress (ariya/FastLZ, commit 344eb40, level 1) produces; only the
// length is needed, so nothing is written: each literal run and each match
// adds the bytes the compressor would emit for it.
//
// The compressor: a 13-bit hash table of the positions of 3-byte sequences;
// at each position it looks up the last position with the same hash, and
// when that one is within 8191 bytes and its 3 bytes are equal, it emits the
// pending literals and a match as long as the bytes keep agreeing (up to 4
// bytes before the end of the input), then hashes the two positions at the
// end of the match and continues after it. The last 12 bytes are never
// searched. Output sizes:
//   - a literal run of n bytes: n/32 full chunks of 1+32 bytes, then 1+n%32
//     bytes if n%32 > 0;
//   - a match whose length field is L (match length - 2): 3 bytes per 262 of
//     L beyond the last chunk, then 2 bytes if the rest is < 7, else 3.

const (
	flzHashLog     = 13
	flzHashSize    = 1 << flzHashLog
	flzMaxCopy     = 32
	flzMaxLen      = 264 // 256 + 8
	flzMaxDistance = 8192
)

func flzHash(v uint32) uint32 {
	return (v * 2654435769) >> (32 - flzHashLog) & (flzHashSize - 1)
}

// read24 is the little-endian 3-byte sequence at b[i:].
func read24(b []byte, i int) uint32 {
	return uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16
}

func flzLiteralsLen(n int) int {
	size := (n / flzMaxCopy) * (1 + flzMaxCopy)
	if r := n % flzMaxCopy; r > 0 {
		size += 1 + r
	}
	return size
}

func flzMatchLen(l int) int {
	size := 0
	for l > flzMaxLen-2 {
		size += 3
		l -= flzMaxLen - 2
	}
	if l < 7 {
		return size + 2
	}
	return size + 3
}

// FastLZSize returns the length of data compressed by FastLZ level 1.
func FastLZSize(data []byte) uint64 {
	n := len(data)
	var htab [flzHashSize]int32 // positions; 0 doubles as "never seen", as in FastLZ
	size := 0
	anchor := 0
	ip := 2
	ipLimit := n - 13 // FastLZ stops searching 12 bytes before the end
	ipBound := n - 4  // and stops extending a match 4 bytes before it
	for ip < ipLimit {
		var ref, seq int
		found := false
		for {
			s := read24(data, ip)
			h := flzHash(s)
			ref = int(htab[h])
			htab[h] = int32(ip)
			distance := ip - ref
			match := distance < flzMaxDistance && read24(data, ref) == s
			seq = ip
			if ip >= ipLimit {
				break
			}
			ip++
			if match {
				found = true
				break
			}
		}
		// FastLZ leaves the search one past the match and gives up when
		// that reaches the limit.
		if !found || ip >= ipLimit {
			break
		}
		ip = seq
		if ip > anchor {
			size += flzLiteralsLen(ip - anchor)
		}
		// Match length beyond the first 3 bytes, plus one: FastLZ's
		// flz_cmp counts the first differing byte too (or stops at the
		// bound).
		p, q := ref+3, ip+3
		l := 0
		for q < ipBound {
			l++
			if data[p] != data[q] {
				break
			}
			p++
			q++
		}
		size += flzMatchLen(l)
		ip += l
		htab[flzHash(read24(data, ip))] = int32(ip)
		ip++
		htab[flzHash(read24(data, ip))] = int32(ip)
		ip++
		anchor = ip
	}
	size += flzLiteralsLen(n - anchor)
	return uint64(size)
}
