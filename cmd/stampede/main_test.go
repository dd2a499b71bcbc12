package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/internal/py"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		runErr       error
		code         int
		stdout       string // prefix
		stderr       string // exact
		wantRunCalls int
	}{
		{name: "help", args: []string{"--help"}, code: 0, stdout: "usage: stampede [-h] [-V] [SUBCOMMAND] [OPTIONS]\n"},
		{name: "serve help", args: []string{"serve", "-h"}, code: 0, stdout: "usage: stampede serve [-h] [OPTIONS]\n"},
		{name: "help keyword", args: []string{"--help=seed"}, code: 0, stdout: "Arguments matching 'seed':\n"},
		{name: "usage error", args: []string{"serve", "--num-prompts", "x"}, code: 2,
			stderr: "usage: stampede serve [-h] [OPTIONS]\nstampede serve: error: argument --num-prompts: invalid int value: 'x'\n"},
		{name: "not supported", args: []string{"--dataset-name", "custom_image", "--dataset-path", "x.jsonl", "--custom-ensure-client-side-data"}, code: 2,
			stderr: "usage: stampede serve [-h] [OPTIONS]\nstampede serve: error: --custom-ensure-client-side-data is not supported yet\n"},
		{name: "validation error", args: []string{"--max-concurrency", "0"}, code: 1,
			stderr: "ValueError: --max-concurrency must be greater than 0\n"},
		{name: "run", args: []string{"serve", "--seed", "1"}, code: 0, wantRunCalls: 1},
		{name: "run without serve", args: []string{"--seed", "1", "--seed", "2"}, code: 0, wantRunCalls: 1,
			stderr: "WARNING: Found duplicate keys --seed\n"},
		{name: "run fails", args: nil, runErr: errors.New("connection refused"), code: 1, wantRunCalls: 1,
			stderr: "stampede serve: connection refused\n"},
		{name: "run raises", args: nil, runErr: &py.Error{Type: "RuntimeError", Msg: "no model"}, code: 1, wantRunCalls: 1,
			stderr: "RuntimeError: no model\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			saved := runBenchmark
			defer func() { runBenchmark = saved }()
			runBenchmark = func(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
				calls++
				if ctx == nil || cfg == nil {
					t.Error("run called without context or config")
				}
				return tt.runErr
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q, want prefix %q", stdout.String(), tt.stdout)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.stderr)
			}
			if calls != tt.wantRunCalls {
				t.Errorf("benchmark ran %d times, want %d", calls, tt.wantRunCalls)
			}
		})
	}
}

func TestRunPassesConfig(t *testing.T) {
	saved := runBenchmark
	defer func() { runBenchmark = saved }()
	var got *plan.Plan
	runBenchmark = func(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
		got = cfg
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if code := run(ctx, []string{"serve", "--num_prompts", "7", "--base-url", "http://h:1"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got == nil || got.NumPrompts != 7 || got.APIURL != "http://h:1/v1/completions" {
		t.Errorf("config %+v", got)
	}
}

// TestRunInterrupted: a run stopped by a signal exits 128 + the signal's
// number, whether it got to print its result (no error) or was cut short
// before the measured part.
func TestRunInterrupted(t *testing.T) {
	tests := []struct {
		name   string
		sig    syscall.Signal
		runErr error
		code   int
		stderr string
	}{
		{name: "result printed", sig: syscall.SIGINT, code: 130},
		{name: "terminated", sig: syscall.SIGTERM, code: 143},
		{name: "before the run", sig: syscall.SIGINT, runErr: fmt.Errorf("ready check: %w", context.Canceled), code: 130,
			stderr: "stampede serve: interrupted by interrupt\n"},
		{name: "save failed", sig: syscall.SIGINT, runErr: errors.New("saving results to r.json: disk full"), code: 130,
			stderr: "stampede serve: saving results to r.json: disk full\n"},
		{name: "python error", sig: syscall.SIGINT, runErr: &py.Error{Type: "RuntimeError", Msg: "Failed to fetch models"}, code: 130,
			stderr: "RuntimeError: Failed to fetch models\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := runBenchmark
			defer func() { runBenchmark = saved }()
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			runBenchmark = func(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
				cancel(interrupted{tt.sig})
				return tt.runErr
			}
			var stderr bytes.Buffer
			if code := run(ctx, []string{"serve"}, io.Discard, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestInterruptContext sends the process real signals (SIGUSR1 standing
// for Ctrl-C, SIGUSR2 for SIGTERM): the first cancels the context with
// the signal as its cause, the second closes the hard stop the run
// watches, the third exits; terminate exits at once.
func TestInterruptContext(t *testing.T) {
	wait := func(t *testing.T, ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not happen", what)
		}
	}
	send := func(t *testing.T, sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	// exitsWith waits for exit to be called with 128 + sig.
	exitsWith := func(t *testing.T, exited <-chan int, sig syscall.Signal) {
		t.Helper()
		select {
		case code := <-exited:
			if code != 128+int(sig) {
				t.Errorf("exit code %d, want %d", code, 128+int(sig))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v did not exit", sig)
		}
	}
	t.Run("three signals of any kind", func(t *testing.T) {
		exited := make(chan int, 1)
		ctx, stop := interruptContext(context.Background(), io.Discard, func(code int) { exited <- code }, syscall.SIGUSR1, syscall.SIGUSR2)
		defer stop()
		hard := endpoint.HardStop(ctx)

		send(t, syscall.SIGUSR2)
		wait(t, ctx.Done(), "cancelling the context")
		var intr interrupted
		if !errors.As(context.Cause(ctx), &intr) || intr.sig != syscall.SIGUSR2 {
			t.Errorf("cause %v, want interrupted by SIGUSR2", context.Cause(ctx))
		}
		select {
		case <-hard:
			t.Fatal("the first signal closed the hard stop")
		default:
		}

		send(t, syscall.SIGUSR1)
		wait(t, hard, "the hard stop")
		select {
		case code := <-exited:
			t.Fatalf("the second signal exited with %d", code)
		default:
		}

		send(t, syscall.SIGUSR2)
		exitsWith(t, exited, syscall.SIGUSR2)
	})
	t.Run("the lines name the signal", func(t *testing.T) {
		for _, c := range []struct {
			sig         syscall.Signal
			cause, hint string
		}{
			{syscall.SIGINT, "interrupted", "Interrupt again to stop at once."},
			{syscall.SIGTERM, "terminated (SIGTERM)", "A second signal (Ctrl-C, SIGTERM or SIGHUP) stops at once."},
			{syscall.SIGHUP, "hung up (SIGHUP)", "A second signal (Ctrl-C, SIGTERM or SIGHUP) stops at once."},
		} {
			if got := stopCause(c.sig); got != c.cause {
				t.Errorf("stopCause(%v) = %q, want %q", c.sig, got, c.cause)
			}
			if got := againHint(c.sig); got != c.hint {
				t.Errorf("againHint(%v) = %q, want %q", c.sig, got, c.hint)
			}
		}
	})
}

// TestBufferBudgetDefault ties --max-buffered-bytes' default to the
// engine's own: the option table and the transport name one budget.
func TestBufferBudgetDefault(t *testing.T) {
	p, err := cli.Parse(nil, backend.Choices())
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxBufferedBytes != engine.DefaultMaxBufferedBytes {
		t.Errorf("--max-buffered-bytes defaults to %d, the engine's budget is %d", p.MaxBufferedBytes, engine.DefaultMaxBufferedBytes)
	}
}

// TestFailOnErrorExitStatus: a run that ends with failed requests under
// --fail-on-error exits 3 and says why; other errors keep their statuses.
func TestFailOnErrorExitStatus(t *testing.T) {
	saved := runBenchmark
	defer func() { runBenchmark = saved }()
	runBenchmark = func(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer) error {
		if !cfg.FailOnError {
			t.Errorf("--fail-on-error did not reach the plan")
		}
		return &outcome.RequestsFailed{Failed: 2, Requests: 5}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--fail-on-error", "--base-url", "http://h:1"}, io.Discard, &stderr); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if want := "stampede serve: 2 of 5 requests failed (--fail-on-error)\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
