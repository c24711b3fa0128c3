package main

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestProfileConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ProfileConfig
		err  string
	}{
		{"off", ProfileConfig{}, ""},
		{"on", ProfileConfig{Addr: "127.0.0.1:6060", MutexFraction: 10, BlockRate: 1000}, ""},
		{"no port", ProfileConfig{Addr: "127.0.0.1"}, "--pprof.addr"},
		{"rates without address", ProfileConfig{MutexFraction: 1}, "need --pprof.addr"},
		{"negative", ProfileConfig{Addr: "127.0.0.1:0", BlockRate: -1}, "want 0 (off) or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.err == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Validate: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

func TestProfileServer(t *testing.T) {
	p := newProfileServer(ProfileConfig{Addr: "127.0.0.1:0", MutexFraction: 5, BlockRate: 1}, zerolog.Nop())
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.SetMutexProfileFraction(-1); got != 5 {
		t.Fatalf("mutex profile fraction %d, want 5", got)
	}
	base := "http://" + p.Addr().String()
	for path, want := range map[string]string{
		"/debug/pprof/":                  "mutex",
		"/debug/pprof/mutex?debug=1":     "--- mutex:",
		"/debug/pprof/block?debug=1":     "--- contention:",
		"/debug/pprof/cmdline":           "",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d, body without %q:\n%.300s", path, resp.StatusCode, want, body)
		}
	}
	// The RPC methods are not served here.
	if resp, err := http.Post(base+"/", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the profile listener answered a JSON-RPC request")
		}
	}
	// A second server on the same address fails to start.
	q := newProfileServer(ProfileConfig{Addr: p.Addr().String()}, zerolog.Nop())
	if err := q.Start(); err == nil {
		q.Stop()
		t.Fatal("second listener on a bound address started")
	}
	p.Stop()
	if got := runtime.SetMutexProfileFraction(-1); got != 0 {
		t.Fatalf("mutex profile fraction %d after Stop, want 0", got)
	}
	if c, err := net.Dial("tcp", p.Addr().String()); err == nil {
		c.Close()
		t.Fatal("listener still open after Stop")
	}
}
