package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/plan"
)

// launchesAgents is whether this process is --cluster-local's launcher
// rather than one of the agents it starts.
func launchesAgents(cfg *plan.Plan) bool {
	return cfg.ClusterLocal && os.Getenv(plan.LocalAgentEnv) == ""
}

// runClusterLocal starts the --cluster-size agents of --cluster-local on
// this host and waits for them (docs/cluster.md, "One host, several
// agents"). Its status is agent 0's; when agent 0 succeeded and another
// agent failed, 1, naming that agent.
func runClusterLocal(args []string, cfg *plan.Plan, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		return failed(stderr, fmt.Errorf("--cluster-local re-runs this binary, which it cannot find: %w", err))
	}
	pin, err := cluster.PinAgents(os.Getenv(cluster.PinEnv))
	if err != nil {
		return failed(stderr, err)
	}
	// Every signal that stops a run reaches every agent, once for each
	// time the launcher gets it.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)
	l := &cluster.Local{Exe: exe, Args: args, Env: os.Environ(), Size: cfg.ClusterSize,
		Float: !pin, Streams: cluster.AgentStreams(cfg), Stdout: stdout, Stderr: stderr, Signals: sigs}
	exits, err := l.Run()
	if err != nil {
		return failed(stderr, err)
	}
	for _, e := range exits {
		if e.Err != nil {
			fmt.Fprintf(stderr, "%s: agent %d: %v\n", serve.name, e.Index, e.Err)
		}
	}
	if s := exits[0].Status; s != exitOK {
		return max(s, exitError)
	}
	for _, e := range exits[1:] {
		if e.Status != exitOK && e.Status != exitRequestsFailed {
			fmt.Fprintf(stderr, "%s: agent %d of %d ended with status %d\n", serve.name, e.Index, len(exits), e.Status)
			return exitError
		}
	}
	return exitOK
}
