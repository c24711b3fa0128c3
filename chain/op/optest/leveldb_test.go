package optest

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// writeLog frames records in the LevelDB log format as LevelDB's writer
// does (a test-side encoder, written from the format description).
func writeLog(records ...[]byte) []byte {
	var out []byte
	for _, rec := range records {
		first := true
		for {
			left := logBlockSize - len(out)%logBlockSize
			if left < logHeaderSize {
				out = append(out, make([]byte, left)...)
				left = logBlockSize
			}
			n := min(len(rec), left-logHeaderSize)
			last := n == len(rec)
			typ := byte(recMiddle)
			switch {
			case first && last:
				typ = recFull
			case first:
				typ = recFirst
			case last:
				typ = recLast
			}
			c := crc32.Update(crc32.Checksum([]byte{typ}, castagnoli), castagnoli, rec[:n])
			out = binary.LittleEndian.AppendUint32(out, maskCRC(c))
			out = binary.LittleEndian.AppendUint16(out, uint16(n))
			out = append(out, typ)
			out = append(out, rec[:n]...)
			rec, first = rec[n:], false
			if last {
				break
			}
		}
	}
	return out
}

type op struct {
	del  bool
	k, v []byte
}

func batch(seq uint64, ops ...op) []byte {
	b := binary.LittleEndian.AppendUint64(nil, seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(ops)))
	for _, o := range ops {
		if o.del {
			b = append(b, batchDelete)
			b = binary.AppendUvarint(b, uint64(len(o.k)))
			b = append(b, o.k...)
			continue
		}
		b = append(b, batchPut)
		b = binary.AppendUvarint(b, uint64(len(o.k)))
		b = append(b, o.k...)
		b = binary.AppendUvarint(b, uint64(len(o.v)))
		b = append(b, o.v...)
	}
	return b
}

func put(v []byte) op { return op{k: crypto.Keccak256(v), v: v} }

func value(i, size int) []byte {
	v := make([]byte, size)
	for j := range v {
		v[j] = byte(i*31 + j)
	}
	return v
}

func TestLogRecordsFragments(t *testing.T) {
	// Sizes chosen to give FULL, FIRST/LAST, FIRST/MIDDLE…/LAST records and
	// a block ending with fewer than 7 bytes (a zero trailer).
	sizes := []int{10, 40000, 100000, logBlockSize - logHeaderSize - 3, 1, 5, 0, 70000}
	var recs [][]byte
	for i, s := range sizes {
		recs = append(recs, value(i, s))
	}
	log := writeLog(recs...)
	types := map[byte]int{}
	for off := 0; off < len(log); {
		if logBlockSize-off%logBlockSize < logHeaderSize {
			off += logBlockSize - off%logBlockSize
			continue
		}
		types[log[off+6]]++
		off += logHeaderSize + int(binary.LittleEndian.Uint16(log[off+4:]))
	}
	if types[recFull] == 0 || types[recFirst] == 0 || types[recMiddle] == 0 || types[recLast] == 0 {
		t.Fatalf("test log lacks a record type: %v", types)
	}
	got, err := LogRecords(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d (%d bytes) differs", i, len(recs[i]))
		}
	}
}

func TestLogRecordsRefuses(t *testing.T) {
	good := writeLog(value(1, 100), value(2, 50000))
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for _, tc := range []struct {
		name string
		log  []byte
	}{
		{"payload byte flipped", mut(func(b []byte) []byte { b[20] ^= 1; return b })},
		{"crc flipped", mut(func(b []byte) []byte { b[0] ^= 1; return b })},
		{"type changed", mut(func(b []byte) []byte { b[6] = recLast; return b })},
		{"unknown type", mut(func(b []byte) []byte { b[6] = 7; return b })},
		{"truncated payload", good[:len(good)-1]},
		{"truncated header", good[:logHeaderSize+100+3]},
		{"ends inside a fragmented record", good[:logBlockSize]},
		{"length past block", mut(func(b []byte) []byte { binary.LittleEndian.PutUint16(b[4:], 0xffff); return b })},
		{"non-zero trailer", append(writeLog(value(3, logBlockSize-logHeaderSize-3)), 0, 0, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if recs, err := LogRecords(tc.log); !errors.Is(err, ErrLog) {
				t.Fatalf("got %d records, %v; want ErrLog", len(recs), err)
			}
		})
	}
}

func TestPreimages(t *testing.T) {
	a, b, c := value(1, 40), value(2, 3000), value(3, 40000)
	log := writeLog(batch(1, put(a), put(b)), batch(3, op{del: true, k: crypto.Keccak256(a)}), batch(4, put(c)))
	m, err := Preimages(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || !bytes.Equal(m[crypto.Keccak256Hash(b)], b) || !bytes.Equal(m[crypto.Keccak256Hash(c)], c) {
		t.Fatalf("got %d entries", len(m))
	}
	bad := func(name string, want error, recs ...[]byte) {
		t.Run(name, func(t *testing.T) {
			if m, err := Preimages(writeLog(recs...)); !errors.Is(err, want) {
				t.Fatalf("got %d entries, %v; want %v", len(m), err, want)
			}
		})
	}
	bad("key not keccak", ErrPreimage, batch(1, op{k: crypto.Keccak256(b), v: a}))
	bad("short key", ErrPreimage, batch(1, op{k: []byte{1}, v: a}))
	bad("sequence gap", ErrBatch, batch(1, put(a)), batch(3, put(b)))
	bad("count too high", ErrBatch, func() []byte { r := batch(1, put(a)); r[8] = 2; return r }())
	bad("count too low", ErrBatch, func() []byte { r := batch(1, put(a), put(b)); r[8] = 1; return r }())
	bad("merge entry", ErrBatch, func() []byte { r := batch(1, put(a)); r[12] = 0x02; return r }())
	bad("value length past end", ErrBatch, batch(1, put(a))[:12+1+1+32+1+20])
	bad("short header", ErrBatch, []byte{1, 2, 3})
}

// TestPreimagesReal checks the real logs: every fixture reads, its stored
// checksums are masked (the raw crc32c would not match), and one flipped
// bit anywhere in a record's payload or checksum is refused.
func TestPreimagesReal(t *testing.T) {
	dir := filepath.Join(Dir(t), "kona")
	for _, n := range Blocks() {
		log := realLog(t, dir, n)
		recs, err := LogRecords(log)
		if err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		stored := binary.LittleEndian.Uint32(log[0:4])
		raw := crc32.Update(crc32.Checksum(log[6:7], castagnoli), castagnoli, log[logHeaderSize:logHeaderSize+int(binary.LittleEndian.Uint16(log[4:6]))])
		if stored == raw || stored != maskCRC(raw) {
			t.Fatalf("block %d: stored crc %08x, raw %08x, masked %08x", n, stored, raw, maskCRC(raw))
		}
		ops := 0
		for _, r := range recs {
			b, err := DecodeBatch(r)
			if err != nil {
				t.Fatal(err)
			}
			ops += len(b.Ops)
		}
		m, err := Preimages(log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("block %d: %d bytes, %d records, %d entries, %d distinct preimages", n, len(log), len(recs), ops, len(m))
		for _, off := range []int{0, 3, 7, 100, len(log) / 2, len(log) - 1} {
			c := bytes.Clone(log)
			c[off] ^= 0x10
			if _, err := Preimages(c); err == nil {
				t.Fatalf("block %d: bit flipped at offset %d accepted", n, off)
			}
		}
	}
}

func realLog(t *testing.T, dir string, n uint64) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("block-%d.tar.gz", n)))
	if err != nil {
		t.Fatal(err)
	}
	_, log, err := untar(data, n, true)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// TestParseRefuses: a fixture archive with a corrupted log, or missing a
// member, or whose preimages lack the parent root, is refused.
func TestParseRefuses(t *testing.T) {
	dir := filepath.Join(Dir(t), "kona")
	const n = 26207960
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("block-%d.tar.gz", n)))
	if err != nil {
		t.Fatal(err)
	}
	js, log, err := untar(data, n, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data, n); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data, n+1); !errors.Is(err, ErrFixture) {
		t.Fatalf("wrong block number: %v", err)
	}
	rebuild := func(js, log []byte) []byte {
		var buf bytes.Buffer
		w := tar.NewWriter(&buf)
		for name, b := range map[string][]byte{"fixture.json": js, "kv/000004.log": log} {
			if b == nil {
				continue
			}
			if err := w.WriteHeader(&tar.Header{Name: fmt.Sprintf("block-%d/%s", n, name), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			w.Write(b)
		}
		w.Close()
		return buf.Bytes()
	}
	if _, err := Parse(rebuild(js, log), n); err != nil {
		t.Fatalf("rebuilt archive: %v", err)
	}
	corrupt := bytes.Clone(log)
	corrupt[logHeaderSize+40] ^= 1
	if _, err := Parse(rebuild(js, corrupt), n); !errors.Is(err, ErrLog) || !errors.Is(err, ErrFixture) {
		t.Fatalf("corrupt crc: %v", err)
	}
	if _, err := Parse(rebuild(js, nil), n); !errors.Is(err, ErrFixture) {
		t.Fatalf("no log: %v", err)
	}
	if _, err := Parse(rebuild(nil, log), n); !errors.Is(err, ErrFixture) {
		t.Fatalf("no fixture.json: %v", err)
	}
	// A log without the parent root's node.
	root := Load(t, n).Parent.Root
	recs, _ := LogRecords(log)
	var kept [][]byte
	seq := uint64(1)
	for _, r := range recs {
		b, _ := DecodeBatch(r)
		var ops []op
		for _, o := range b.Ops {
			if common.BytesToHash(o.Key) != root {
				ops = append(ops, op{del: o.Delete, k: o.Key, v: o.Value})
			}
		}
		kept = append(kept, batch(seq, ops...))
		seq += uint64(len(ops))
	}
	if _, err := Parse(rebuild(js, writeLog(kept...)), n); !errors.Is(err, ErrMissing) {
		t.Fatalf("log without the root node: %v", err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"unknown payload field", `"gasLimit":"0x3938700","eip1559Params"`, `"gasLimitX":"0x1","gasLimit":"0x3938700","eip1559Params"`},
		{"bad transaction", `"transactions":[`, `"transactions":["0x7e00",`},
		{"short eip1559Params", `"eip1559Params":"0x000000fa00000006"`, `"eip1559Params":"0x000000fa000000"`},
		{"parent header number", `"number":"0x18fe6d7"`, `"number":"0x18fe6d6"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := bytes.Replace(js, []byte(tc.from), []byte(tc.to), 1)
			if bytes.Equal(bad, js) {
				t.Fatalf("%q not in fixture.json", tc.from)
			}
			if _, err := Parse(rebuild(bad, log), n); !errors.Is(err, ErrFixture) {
				t.Fatalf("got %v, want ErrFixture", err)
			}
		})
	}
}

// FuzzPreimages: arbitrary bytes never panic or hang the log reader.
func FuzzPreimages(f *testing.F) {
	f.Add(writeLog(batch(1, put(value(1, 40)), op{del: true, k: crypto.Keccak256(value(2, 3))})))
	f.Add(writeLog(value(1, 40000)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, log []byte) {
		m, err := Preimages(log)
		if err != nil {
			return
		}
		for k, v := range m {
			if crypto.Keccak256Hash(v) != k {
				t.Fatalf("entry %s is not a preimage", k)
			}
		}
	})
}
