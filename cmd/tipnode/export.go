package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/tipnode/tipnode/chain"
)

// runExport writes canonical blocks to a file in the format `geth export`
// writes (concatenated RLP blocks), which `geth import` and `tipnode
// import` read.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sf       StoreFlags
		lc       LogConfig
		from, to string
	)
	sf.register(fs, datadirRequired)
	lc.register(fs)
	fs.StringVar(&from, "from", "1", "first block to export")
	fs.StringVar(&to, "to", "latest", "last block to export (a number or latest)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := lc.Validate(); err != nil {
		return err
	}
	if sf.DataDir == "" || len(files) != 1 {
		return errors.New("usage: tipnode export --datadir DIR [--from N] [--to M|latest] FILE.rlp")
	}
	log := lc.logger(stderr)
	_, view, closeAll, err := openReadView(&sf, log)
	if err != nil {
		return err
	}
	defer closeAll()
	first, err := strconv.ParseUint(from, 10, 64)
	if err != nil {
		return fmt.Errorf("--from %q: %v", from, err)
	}
	last, err := blockOrLatest(view, "to", to)
	if err != nil {
		return err
	}
	f, err := os.Create(files[0])
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(ctxWriter{ctx, f}, 1<<20)
	stats, err := chain.ExportRLP(view, first, last, bw, 5*time.Second, func(s chain.ExportStats) {
		log.Info().Uint64("blocks", s.Blocks).Uint64("block", s.Last).Int64("bytes", s.Bytes).Msg("exporting")
	})
	err = errors.Join(err, bw.Flush(), f.Sync(), f.Close())
	if err != nil {
		os.Remove(files[0])
		return err
	}
	log.Info().Str("file", files[0]).Uint64("from", first).Uint64("to", last).Uint64("blocks", stats.Blocks).
		Int64("bytes", stats.Bytes).Str("elapsed", stats.Duration.Round(time.Millisecond).String()).Msg("exported")
	return nil
}

// ctxWriter fails writes once ctx is done (an interrupted export stops).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
