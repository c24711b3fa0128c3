package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"

	"github.com/rs/zerolog"
)

// ProfileConfig is the profiling listener of a serving process
// (--pprof.*): Go's runtime profiles (CPU, heap, goroutines, mutex and
// block contention, execution traces) on /debug/pprof/ of their own
// address, never on the RPC listener.
type ProfileConfig struct {
	// Addr is the listen address; "" (the default) serves nothing.
	Addr string
	// MutexFraction samples 1/n of mutex contention events for the mutex
	// profile (runtime.SetMutexProfileFraction). Default 0 = off.
	MutexFraction int
	// BlockRate samples one blocking event per this many nanoseconds
	// spent blocked (runtime.SetBlockProfileRate; 1 = every event).
	// Default 0 = off.
	BlockRate int
}

// Validate checks the address and the rates.
func (c ProfileConfig) Validate() error {
	if c.MutexFraction < 0 || c.BlockRate < 0 {
		return fmt.Errorf("--pprof.mutexfraction %d / --pprof.blockrate %d: want 0 (off) or more", c.MutexFraction, c.BlockRate)
	}
	if c.Addr == "" {
		if c.MutexFraction > 0 || c.BlockRate > 0 {
			return errors.New("--pprof.mutexfraction and --pprof.blockrate need --pprof.addr")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--pprof.addr %q: %w", c.Addr, err)
	}
	return nil
}

// profileServer serves ProfileConfig's listener (Start/Stop).
// register adds the --pprof.* flags to fs.
func (c *ProfileConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "pprof.addr", "", "serve Go's runtime profiles on http://ADDR/debug/pprof/ (its own listener; keep it private, e.g. 127.0.0.1:6060; \"\" = off)")
	fs.IntVar(&c.MutexFraction, "pprof.mutexfraction", 0, "with --pprof.addr: sample 1/n of mutex contention events for /debug/pprof/mutex (0 = off)")
	fs.IntVar(&c.BlockRate, "pprof.blockrate", 0, "with --pprof.addr: sample one blocking event per this many ns blocked for /debug/pprof/block (1 = all, 0 = off)")
}

type profileServer struct {
	cfg ProfileConfig
	log zerolog.Logger
	srv *http.Server
	ln  net.Listener
}

func newProfileServer(cfg ProfileConfig, log zerolog.Logger) *profileServer {
	return &profileServer{cfg: cfg, log: log.With().Str("component", "pprof").Logger()}
}

// Start binds the address, sets the sampling rates and serves; it does
// nothing when no address is set.
func (p *profileServer) Start() error {
	if p.cfg.Addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", p.cfg.Addr)
	if err != nil {
		return fmt.Errorf("--pprof.addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // every named profile: heap, mutex, block, goroutine, allocs, …
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Profiles run for their ?seconds=; the write timeout leaves them room.
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	p.ln = ln
	runtime.SetMutexProfileFraction(p.cfg.MutexFraction)
	runtime.SetBlockProfileRate(p.cfg.BlockRate)
	ev := p.log.Info().Str("addr", ln.Addr().String()).Int("mutexFraction", p.cfg.MutexFraction).Int("blockRate", p.cfg.BlockRate)
	if host, _, _ := net.SplitHostPort(p.cfg.Addr); host == "" || !isLoopback(host) {
		ev = p.log.Warn().Str("addr", ln.Addr().String()).Str("why", "profiles show code, arguments and memory: keep this address private")
	}
	ev.Msg("serving Go profiles on /debug/pprof/")
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Error().Err(err).Msg("pprof listener stopped")
		}
	}()
	return nil
}

// Addr is the bound address (nil before Start or without one).
func (p *profileServer) Addr() net.Addr {
	if p.ln == nil {
		return nil
	}
	return p.ln.Addr()
}

// Stop closes the listener and the profiles in progress, and turns the
// sampling off again.
func (p *profileServer) Stop() {
	if p.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		p.srv.Close()
	}
	runtime.SetMutexProfileFraction(0)
	runtime.SetBlockProfileRate(0)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
