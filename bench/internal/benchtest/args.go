// Package benchtest holds what the tests of several bench packages share;
// only tests import it.
package benchtest

import (
	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
)

// ParseArgs parses a `stampede serve` command line over the backend
// table, with getenv as the environment.
func ParseArgs(args []string, getenv func(string) string) (*plan.Plan, error) {
	return cli.ParseEnv(args, backend.Choices(), getenv)
}

// NoEnv is an empty environment.
func NoEnv(string) string { return "" }
