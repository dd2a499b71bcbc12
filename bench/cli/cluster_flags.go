package cli

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// ClusterFlags run one benchmark from several hosts (docs/cluster.md,
// "Running one benchmark from N hosts"): every agent builds the same requests and arrival schedule from
// the same flags and seed and sends request i when i mod size is its
// index; agent 0 coordinates the start and merges the partial results
// (plan.Cluster).
type ClusterFlags struct {
	ClusterSize       int     `long:"cluster-size" default:"1" value-name:"N" description:"Agents that run this benchmark together, each sending every N-th request (request i goes to agent i mod N); --max-concurrency is split between them."`
	ClusterIndex      *int    `long:"cluster-index" value-name:"I" description:"This agent's index, 0 to N-1 (default: $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it); agent 0 coordinates."`
	Coordinator       string  `long:"coordinator" value-name:"HOST:PORT" description:"Where the agents reach agent 0, which listens on the address of this host that HOST resolves to (0.0.0.0: every interface); required with --cluster-size above 1."`
	ClusterTimeoutSec float64 `long:"cluster-timeout-sec" default:"300" description:"Seconds agent 0 waits for every agent to register, and for their results after its own share ended; agents wait as long for agent 0."`
	SavePartial       string  `long:"save-partial" value-name:"FILE" description:"Also save this agent's partial result (every request and token time, compressed) for 'stampede merge'; agent K of a cluster saves FILE with .agent-K before its extension."`
	ClusterToken      string  `long:"cluster-token" value-name:"SECRET" description:"The secret every agent of the cluster holds, proved to agent 0 without sending it (default: $STAMPEDE_CLUSTER_TOKEN); without one a cluster runs on loopback only."`
	ClusterTokenFile  string  `long:"cluster-token-file" value-name:"FILE" description:"Read the cluster's secret from FILE (a mounted Kubernetes Secret); instead of --cluster-token."`
	ClusterLocal      bool    `long:"cluster-local" description:"Start the --cluster-size agents as processes on this host, each pinned to its share of the CPUs, coordinated on loopback with a fresh secret; agent 0's stdout is this command's, every agent's stderr line is prefixed with 'agent I: '."`
	ResultsToLog      bool    `long:"results-to-log" description:"After the run, print every file it saved (result JSON, sidecar, report, partial) on stdout between markers, compressed and base64'd in bounded lines, for 'stampede results extract' to recover from a log (a Kubernetes pod's)."`
}

// jobCompletionIndex is the variable a Kubernetes Indexed Job sets in each
// pod to the pod's completion index.
const jobCompletionIndex = "JOB_COMPLETION_INDEX"

// resolveCluster checks the cluster options and takes the index from
// $JOB_COMPLETION_INDEX when --cluster-index is not given.
func (c *draft) resolveCluster(getenv func(string) string) error {
	if c.ClusterLocal {
		if err := c.resolveClusterLocal(); err != nil {
			return err
		}
		if index := getenv(plan.LocalAgentEnv); index != "" {
			return c.resolveLocalAgent(index, getenv)
		}
		return nil
	}
	if c.ClusterSize < 1 {
		return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-size: invalid value %d: want the number of agents, 1 or more", c.ClusterSize)}
	}
	if t := c.ClusterTimeoutSec; !(t > 0) || math.IsInf(t, 1) {
		return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-timeout-sec: invalid value %v: want seconds, greater than 0", t)}
	}
	if c.ClusterSize == 1 {
		if c.ClusterIndex != nil && *c.ClusterIndex != 0 {
			return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-index: invalid value %d: a cluster of one (--cluster-size 1) has only agent 0", *c.ClusterIndex)}
		}
		c.AgentIndex = 0
		return nil
	}
	from, text := "argument --cluster-index", ""
	if c.ClusterIndex != nil {
		text = strconv.Itoa(*c.ClusterIndex)
	} else {
		from, text = "$"+jobCompletionIndex, getenv(jobCompletionIndex)
		if text == "" {
			return &py.UsageError{Msg: fmt.Sprintf("--cluster-size %d needs this agent's index: give --cluster-index or set $%s", c.ClusterSize, jobCompletionIndex)}
		}
	}
	i, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || i < 0 || i >= c.ClusterSize {
		return &py.UsageError{Msg: fmt.Sprintf("%s: invalid value %q: want an agent index from 0 to %d (--cluster-size %d)", from, text, c.ClusterSize-1, c.ClusterSize)}
	}
	c.AgentIndex = i
	if c.Coordinator == "" {
		return &py.UsageError{Msg: fmt.Sprintf("--cluster-size %d needs --coordinator HOST:PORT, where agent 0 listens", c.ClusterSize)}
	}
	host, port, err := net.SplitHostPort(c.Coordinator)
	if err != nil || port == "" || host == "" {
		return &py.UsageError{Msg: fmt.Sprintf("argument --coordinator: invalid value %q: want HOST:PORT", c.Coordinator)}
	}
	if err := c.resolveClusterToken(getenv, host); err != nil {
		return err
	}
	return c.checkClusterShares()
}

// checkClusterShares refuses a --max-concurrency smaller than the agents,
// which would leave an agent nothing in flight. Every other option runs
// with agents as on one host (docs/cluster.md, "What the agents carry").
func (c *draft) checkClusterShares() error {
	if c.MaxConcurrency != nil && *c.MaxConcurrency < c.ClusterSize {
		return &py.UsageError{Msg: fmt.Sprintf("--max-concurrency %d is split between %d agents: want at least one request in flight per agent", *c.MaxConcurrency, c.ClusterSize)}
	}
	return nil
}

// resolveClusterToken takes the cluster's secret from --cluster-token,
// --cluster-token-file (read when the run starts) or $STAMPEDE_CLUSTER_TOKEN,
// and refuses a cluster without one unless agent 0 is on loopback, where
// no other host can reach it.
func (c *draft) resolveClusterToken(getenv func(string) string, host string) error {
	if c.ClusterToken != "" && c.ClusterTokenFile != "" {
		return &py.UsageError{Msg: "argument --cluster-token-file: not allowed with argument --cluster-token: give the cluster's secret once"}
	}
	if c.ClusterToken == "" && c.ClusterTokenFile == "" {
		c.ClusterToken = strings.TrimSpace(getenv(plan.ClusterTokenEnv))
	}
	if c.ClusterToken != "" || c.ClusterTokenFile != "" {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return &py.UsageError{Msg: fmt.Sprintf("--cluster-size %d with --coordinator %s needs the cluster's shared secret, so that no other host can join or stop the run: "+
		"give every agent the same --cluster-token-file FILE or $%s (or --cluster-token); without one the agents must all run on this host (--coordinator 127.0.0.1:PORT)",
		c.ClusterSize, c.Coordinator, plan.ClusterTokenEnv)}
}

// resolveClusterLocal checks --cluster-local in the command that launches
// the agents, so that every usage error is found before one starts. The
// launcher chooses the index, the coordinator and the secret of each
// agent; given here they are an error.
func (c *draft) resolveClusterLocal() error {
	switch {
	case c.ClusterSize < 2:
		return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-local: needs --cluster-size N with N of 2 or more (got %d): the number of agents to start on this host", c.ClusterSize)}
	case c.ClusterIndex != nil:
		return &py.UsageError{Msg: "argument --cluster-index: not allowed with argument --cluster-local, which gives each agent it starts its index"}
	case c.Coordinator != "":
		return &py.UsageError{Msg: "argument --coordinator: not allowed with argument --cluster-local, whose agents meet on a free loopback port"}
	case c.ClusterToken != "" || c.ClusterTokenFile != "":
		return &py.UsageError{Msg: "argument --cluster-token/--cluster-token-file: not allowed with argument --cluster-local, which draws a fresh secret for its agents"}
	case len(c.CPUs) > 0:
		return &py.UsageError{Msg: "argument --cpus: not allowed with argument --cluster-local, which splits its own CPUs between the agents: run it under taskset -c LIST to choose them"}
	}
	if t := c.ClusterTimeoutSec; !(t > 0) || math.IsInf(t, 1) {
		return &py.UsageError{Msg: fmt.Sprintf("argument --cluster-timeout-sec: invalid value %v: want seconds, greater than 0", t)}
	}
	c.AgentIndex = 0
	return c.checkClusterShares()
}

// resolveLocalAgent places an agent that --cluster-local's launcher
// started (index is its $STAMPEDE_CLUSTER_LOCAL_AGENT): its command line
// is the launcher's, checked by resolveClusterLocal already; its index,
// coordinator and secret are in its environment. Only agent 0 draws the
// progress bar, so that the terminal shows one.
func (c *draft) resolveLocalAgent(index string, getenv func(string) string) error {
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= c.ClusterSize {
		return &py.UsageError{Msg: fmt.Sprintf("$%s=%q: want an agent index from 0 to %d (--cluster-size %d)", plan.LocalAgentEnv, index, c.ClusterSize-1, c.ClusterSize)}
	}
	c.AgentIndex = i
	// The launcher sets all three; a variable left over in the user's
	// shell must not make `serve --cluster-local` an agent that dials a
	// stale port, or one that joins without the launch's secret.
	if c.Coordinator = getenv(plan.LocalCoordinatorEnv); c.Coordinator == "" {
		return &py.UsageError{Msg: fmt.Sprintf("$%s is set, but not $%s: an agent of --cluster-local is started by its launcher", plan.LocalAgentEnv, plan.LocalCoordinatorEnv)}
	}
	if !isLoopbackAddr(c.Coordinator) {
		return &py.UsageError{Msg: fmt.Sprintf("$%s=%q: want agent 0's loopback host:port, as --cluster-local's launcher sets it (unset $%s and $%s to launch a run)",
			plan.LocalCoordinatorEnv, c.Coordinator, plan.LocalAgentEnv, plan.LocalCoordinatorEnv)}
	}
	if c.ClusterToken = strings.TrimSpace(getenv(plan.ClusterTokenEnv)); c.ClusterToken == "" {
		return &py.UsageError{Msg: fmt.Sprintf("$%s is set, but not $%s: an agent of --cluster-local gets its launch's secret from the launcher (unset $%s and $%s to launch a run)",
			plan.LocalAgentEnv, plan.ClusterTokenEnv, plan.LocalAgentEnv, plan.LocalCoordinatorEnv)}
	}
	c.DisableTqdm = c.DisableTqdm || i > 0
	return nil
}

// isLoopbackAddr reports whether addr is host:port with a port and a
// loopback host (an address, or localhost).
func isLoopbackAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RefuseAgents is the usage error of a command that cannot run a
// cluster's agents (command names it, "stampede sweep", as in
// whyNoAgentsOf, which says why) for a plan that asks for them, with
// --cluster-local or --cluster-size above 1; nil for a single host's
// plan. The commands call it once they have parsed their serve options,
// before anything is built or sent.
func RefuseAgents(p *plan.Plan, command string) error {
	why, ok := whyNoAgentsOf[command]
	if !ok {
		why = "runs in this process alone"
	}
	switch {
	case p.ClusterLocal:
		return py.UsageErrorf("argument --cluster-local: not allowed with %s, which %s; run it on one host, or run each benchmark with `stampede serve`", command, why)
	case p.Clustered():
		return py.UsageErrorf("argument --cluster-size: invalid value %d with %s, which %s; run it on one host (--cluster-size 1), or run each benchmark with `stampede serve`", p.ClusterSize, command, why)
	}
	return nil
}

// Why a command, and the Rust client's option that does the same, cannot
// run a cluster's agents, worded once for both.
const (
	whySweep         = "reads each point's result, held by agent 0 of a cluster alone"
	whyConversations = "drives its conversations from this process alone"
)

// whyNoAgentsOf is RefuseAgents' table: why each command, or Rust
// client's option, cannot run agents.
var whyNoAgentsOf = map[string]string{
	"stampede sweep":     whySweep,
	"stampede slo":       "chooses each next load from the last run's result, held by agent 0 of a cluster alone",
	"stampede multiturn": whyConversations,
	"stampede rerun":     "runs the saved command line in this process alone",
	"--num-runs":         "repeats the run in this process, while the agents other than 0 end with their share of the first",
	"--sweep-max-concurrency/--sweep-request-rate": whySweep,
	"--multi-turn": whyConversations,
}

// whyNoAgents are the Rust client's options that serve runs and that
// cannot run agents (whyNoAgentsOf says why), with whether a plan asks
// for them.
var whyNoAgents = []struct {
	command string
	asks    func(p *plan.Plan) bool
}{
	{"--num-runs", func(p *plan.Plan) bool { return p.NumRuns > 1 }},
	{"--sweep-max-concurrency/--sweep-request-rate", RustSweep},
	{"--multi-turn", func(p *plan.Plan) bool { return p.MultiTurn }},
}

// refuseAgentCommands refuses the commands of whyNoAgents with agents.
func refuseAgentCommands(p *plan.Plan) error {
	for _, c := range whyNoAgents {
		if c.asks(p) {
			if err := RefuseAgents(p, c.command); err != nil {
				return err
			}
		}
	}
	return nil
}
