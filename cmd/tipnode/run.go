package main

import (
	"context"
	"errors"
)

func runRun(ctx context.Context, args []string) error {
	return errors.New("run: not wired yet")
}

func runDev(ctx context.Context, args []string) error {
	return errors.New("dev: not wired yet")
}
