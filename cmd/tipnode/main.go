// Command tipnode runs the tipnode Ethereum JSON-RPC node.
//
//	tipnode init   --datadir DIR --genesis FILE | --genesis-from URL
//	tipnode import --datadir DIR FILE.rlp...
//	tipnode run    --datadir DIR [--http.addr ADDR] [--sequencer | --follow.rpc URL] ...
//	tipnode dev    [--datadir DIR] [--fork URL[@BLOCK]] ...
//	tipnode export --datadir DIR [--from N] [--to M] FILE.rlp
//	tipnode verify --datadir DIR [--block N]
//
// Flags become Config structs (validated once) handed to the packages; the
// command itself holds no behaviour beyond wiring.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is reported by web3_clientVersion and --version.
var version = "0.1.0"

// command is one subcommand. run writes what it prints for people (the
// dev banner, flag help) to stdout / stderr and its logs to stderr.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"init", "initialise a data directory from a genesis file or a tipnode upstream", runInit},
		{"import", "import blocks from RLP chain files", runImport},
		{"run", "serve JSON-RPC from a data directory", runRun},
		{"dev", "run a fresh dev chain with an embedded sequencer", runDev},
		{"export", "export canonical blocks to an RLP chain file (the geth export format)", runExport},
		{"verify", "check a store: state root from the flat state, the state trie node by node, the header", runVerify},
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "tipnode %s: a persistent Ethereum JSON-RPC node\n\nUsage: tipnode <command> [flags]\n\nCommands:\n", version)
	for _, c := range commands() {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.usage)
	}
	fmt.Fprintf(os.Stderr, "\nRun 'tipnode <command> -h' for the flags of a command.\n")
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		usage()
		return
	}
	if name == "--version" || name == "version" {
		fmt.Println("tipnode", version)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands() {
		if c.name == name {
			err := c.run(ctx, os.Args[2:], os.Stdout, os.Stderr)
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "tipnode %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "tipnode: unknown command %q\n\n", name)
	usage()
	os.Exit(2)
}
