// Package rpctest holds test support shared by the JSON-RPC packages' tests
// (rpc, rpc/eth, rpc/node): HTTP posts, structural JSON comparison and the
// process CPU its benchmarks report per operation. It imports
// none of our packages, so package rpc's own tests can use it.
package rpctest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// ProcessCPU is the user+system CPU time of this process in nanoseconds
// (benchmarks report its growth per operation as cpu-ns/op: the server's
// and the in-process client's work, whatever goroutine did it).
func ProcessCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Post sends body to url as application/json and returns the status and
// the response body.
func Post(t testing.TB, url, body string) (int, []byte) {
	t.Helper()
	return PostCT(t, url, "application/json", body)
}

// PostCT is Post with the given Content-Type.
func PostCT(t testing.TB, url, ct, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, ct, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// JSONEqual compares two JSON texts structurally (numbers as text); an
// empty want matches an empty (all-space) got.
func JSONEqual(t testing.TB, got []byte, want string) bool {
	t.Helper()
	if want == "" {
		return len(bytes.TrimSpace(got)) == 0
	}
	g, err := DecodeAny(got)
	if err != nil {
		t.Errorf("response is not JSON: %v: %s", err, got)
		return false
	}
	w, err := DecodeAny([]byte(want))
	if err != nil {
		t.Fatalf("bad want JSON: %v: %s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

// DecodeAny decodes one JSON value with numbers kept as json.Number.
func DecodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
