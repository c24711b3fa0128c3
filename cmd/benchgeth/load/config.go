package load

import (
	"fmt"
	"time"
)

// Config sets the shape of a run. Start from DefaultConfig.
type Config struct {
	// Duration is the measured time: an open-loop run schedules requests
	// over it, a closed-loop run sends for it. Default 20 s.
	Duration time.Duration
	// Rate is the open-loop request rate per second. Required for OpenLoop.
	Rate float64
	// Workers is the open-loop limit of requests in flight (HTTP
	// connections); requests beyond it wait in the client, their latency
	// still counted from their intended time. Default 256.
	Workers int
	// Connections is the number of connections of a closed-loop run, and of
	// websocket connections of an open-loop run. Default 16.
	Connections int
	// Grace is how long in-flight requests may take after Duration before
	// they are counted as failures. Default 2 s.
	Grace time.Duration
}

// DefaultConfig returns the defaults (Rate unset).
func DefaultConfig() Config {
	return Config{Duration: 20 * time.Second, Workers: 256, Connections: 16, Grace: 2 * time.Second}
}

// Validate checks the fields; openLoop also requires a rate.
func (c Config) Validate(openLoop bool) error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("%w: duration %v", ErrConfig, c.Duration)
	case openLoop && (c.Rate <= 0 || c.Rate > 1e6):
		return fmt.Errorf("%w: rate %v, want (0, 1e6]", ErrConfig, c.Rate)
	case c.Workers < 1 || c.Connections < 1:
		return fmt.Errorf("%w: workers %d, connections %d", ErrConfig, c.Workers, c.Connections)
	case c.Grace <= 0:
		return fmt.Errorf("%w: grace %v", ErrConfig, c.Grace)
	}
	return nil
}
