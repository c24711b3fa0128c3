package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// LogConfig configures logging. Defaults: level info, console format on a
// terminal and JSON otherwise.
type LogConfig struct {
	Level  string // trace, debug, info, warn, error
	Format string // auto, console, json
}

func (c *LogConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Level, "log.level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&c.Format, "log.format", "auto", "log format: auto (console on a terminal, JSON otherwise), console, json")
}

// Validate checks the level and format names.
func (c *LogConfig) Validate() error {
	if _, err := zerolog.ParseLevel(c.Level); err != nil || c.Level == "" {
		return fmt.Errorf("--log.level %q: want trace, debug, info, warn or error", c.Level)
	}
	switch c.Format {
	case "auto", "console", "json":
		return nil
	}
	return fmt.Errorf("--log.format %q: want auto, console or json", c.Format)
}

func (c *LogConfig) logger(w io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(c.Level)
	console := c.Format == "console"
	if c.Format == "auto" {
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			console = true
		}
	}
	if console {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// parseInterleaved parses flags that may appear before, between or after
// positional arguments (Go's flag package stops at the first positional).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
