package remotestate

import (
	"context"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	gethrpc "github.com/ethereum/go-ethereum/rpc"
	"github.com/holiman/uint256"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/tipnode/tipnode/store"
)

// Config configures a Source. Data only: zero fields take the defaults
// of DefaultConfig (WithDefaults); check with Validate.
type Config struct {
	// URL is the upstream JSON-RPC endpoint (http(s):// or ws(s)://).
	// Required.
	URL string
	// RequestTimeout bounds one upstream request. Default 30 s.
	RequestTimeout time.Duration
	// MaxInFlight bounds the upstream requests running at once. Default 16.
	MaxInFlight int
}

// DefaultConfig returns the documented defaults (without a URL).
func DefaultConfig() Config {
	return Config{RequestTimeout: 30 * time.Second, MaxInFlight: 16}
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.RequestTimeout == 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	return c
}

// Validate checks c.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: the upstream URL is required", ErrConfig)
	case err != nil:
		return fmt.Errorf("%w: upstream URL %q: %v", ErrConfig, c.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss":
		return fmt.Errorf("%w: upstream URL %q: want http(s):// or ws(s)://", ErrConfig, c.URL)
	case c.RequestTimeout < 0:
		return fmt.Errorf("%w: negative request timeout", ErrConfig)
	case c.MaxInFlight < 0:
		return fmt.Errorf("%w: negative MaxInFlight", ErrConfig)
	}
	return nil
}

// ParseTarget splits the --fork argument URL[@BLOCK] (BLOCK decimal or
// 0x hex); without @BLOCK, hasBlock is false (the upstream's latest block).
func ParseTarget(s string) (u string, block uint64, hasBlock bool, err error) {
	i := strings.LastIndex(s, "@")
	if i < 0 || strings.Contains(s[i:], "/") {
		return s, 0, false, nil
	}
	block, err = strconv.ParseUint(s[i+1:], 0, 64)
	if err != nil {
		return "", 0, false, fmt.Errorf("%w: --fork %q: block %q is not a number", ErrConfig, s, s[i+1:])
	}
	return s[:i], block, true, nil
}

// Source fetches state from the upstream (store.ForkSource).
type Source struct {
	cfg   Config
	log   zerolog.Logger
	c     *gethrpc.Client
	group singleflight.Group
	sem   chan struct{}

	requests, failures atomic.Uint64
}

var _ store.ForkSource = (*Source)(nil)

// Dial connects to the upstream of cfg.
func Dial(ctx context.Context, cfg Config, log zerolog.Logger) (*Source, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	c, err := gethrpc.DialContext(ctx, cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %v", ErrFetch, cfg.URL, err)
	}
	return &Source{cfg: cfg, log: log.With().Str("component", "fork").Logger(), c: c, sem: make(chan struct{}, cfg.MaxInFlight)}, nil
}

// Close releases the client.
func (s *Source) Close() { s.c.Close() }

// URL is the upstream's URL.
func (s *Source) URL() string { return s.cfg.URL }

// Stats returns the requests sent and failed since Dial.
func (s *Source) Stats() (requests, failures uint64) { return s.requests.Load(), s.failures.Load() }

// batch sends elems as one JSON-RPC batch under the request timeout and
// the in-flight bound; what names the entity in the error.
func (s *Source) batch(what string, elems []gethrpc.BatchElem) error {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	s.requests.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	err := s.c.BatchCallContext(ctx, elems)
	for i := 0; err == nil && i < len(elems); i++ {
		if elems[i].Error != nil {
			err = fmt.Errorf("%s: %w", elems[i].Method, elems[i].Error)
		}
	}
	if err != nil {
		s.failures.Add(1)
		s.log.Warn().Err(err).Str("entity", what).Msg("fork: upstream fetch failed")
		return fmt.Errorf("%w: upstream %s: %s: %v", ErrFetch, s.cfg.URL, what, err)
	}
	return nil
}

// rpcElem is one element of a JSON-RPC batch.
type rpcElem = gethrpc.BatchElem

var emptyCodeHash = types.EmptyCodeHash

type accountResult struct {
	acc  *store.Account
	code []byte
}

// Account returns addr's account at block and its code, in one round trip.
func (s *Source) Account(block uint64, addr common.Address) (*store.Account, []byte, error) {
	what := fmt.Sprintf("account %s at block %d", addr.Hex(), block)
	r, err, _ := s.group.Do(what, func() (any, error) {
		var (
			bal   hexutil.Big
			nonce hexutil.Uint64
			code  hexutil.Bytes
		)
		num := hexutil.EncodeUint64(block)
		elems := []gethrpc.BatchElem{
			{Method: "eth_getBalance", Args: []any{addr, num}, Result: &bal},
			{Method: "eth_getTransactionCount", Args: []any{addr, num}, Result: &nonce},
			{Method: "eth_getCode", Args: []any{addr, num}, Result: &code},
		}
		if err := s.batch(what, elems); err != nil {
			return nil, err
		}
		b := (*big.Int)(&bal)
		balance, overflow := uint256.FromBig(b)
		if overflow || b.Sign() < 0 {
			return nil, fmt.Errorf("%w: upstream %s: %s: balance %s out of range", ErrFetch, s.cfg.URL, what, b)
		}
		if balance.IsZero() && nonce == 0 && len(code) == 0 {
			return accountResult{}, nil // absent (or empty: the same to the EVM after EIP-158)
		}
		acc := &store.Account{Nonce: uint64(nonce), Balance: balance, CodeHash: types.EmptyCodeHash}
		if len(code) > 0 {
			acc.CodeHash = crypto.Keccak256Hash(code)
		}
		return accountResult{acc: acc, code: code}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	ar := r.(accountResult)
	return ar.acc, ar.code, nil
}

// Storage returns slot of addr at block.
func (s *Source) Storage(block uint64, addr common.Address, slot common.Hash) (common.Hash, error) {
	what := fmt.Sprintf("slot %s of %s at block %d", slot.Hex(), addr.Hex(), block)
	r, err, _ := s.group.Do(what, func() (any, error) {
		var v hexutil.Bytes
		elems := []gethrpc.BatchElem{{Method: "eth_getStorageAt", Args: []any{addr, slot, hexutil.EncodeUint64(block)}, Result: &v}}
		if err := s.batch(what, elems); err != nil {
			return nil, err
		}
		if len(v) > common.HashLength {
			return nil, fmt.Errorf("%w: upstream %s: %s: %d-byte value", ErrFetch, s.cfg.URL, what, len(v))
		}
		return common.BytesToHash(v), nil
	})
	if err != nil {
		return common.Hash{}, err
	}
	return r.(common.Hash), nil
}
