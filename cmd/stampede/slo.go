package main

import (
	"context"
	"io"
)

func runSLO(ctx context.Context, args []string, stdout, stderr io.Writer) int { return exitError }
