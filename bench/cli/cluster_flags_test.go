package cli

import (
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

func TestClusterFlags(t *testing.T) {
	env := func(index string) func(string) string {
		return func(k string) string {
			if k == jobCompletionIndex {
				return index
			}
			return ""
		}
	}
	two := []string{"--cluster-size", "3", "--coordinator", "agent-0.stampede:7070", "--cluster-token-file", "/run/secrets/token"}
	for _, tc := range []struct {
		name  string
		args  []string
		env   string
		index int
		err   string
	}{
		{"single host", nil, "", 0, ""},
		{"single host ignores the job index", nil, "5", 0, ""},
		{"index from the Job", two, "2", 2, ""},
		{"flag wins over the Job", append([]string{"--cluster-index", "1"}, two...), "2", 1, ""},
		{"no index", two, "", 0, "give --cluster-index or set $JOB_COMPLETION_INDEX"},
		{"index out of range", two, "3", 0, `$JOB_COMPLETION_INDEX: invalid value "3": want an agent index from 0 to 2`},
		{"flag out of range", append([]string{"--cluster-index", "-1"}, two...), "", 0, "argument --cluster-index: invalid value \"-1\""},
		{"no coordinator", []string{"--cluster-size", "2"}, "0", 0, "needs --coordinator HOST:PORT"},
		{"coordinator without port", []string{"--cluster-size", "2", "--coordinator", "agent-0"}, "0", 0, "argument --coordinator: invalid value"},
		{"size 0", []string{"--cluster-size", "0"}, "", 0, "argument --cluster-size: invalid value 0"},
		{"one agent of one", []string{"--cluster-index", "1"}, "", 0, "has only agent 0"},
		{"extras with agents", append([]string{"--per-token-itl", "--server-metrics", "--probe-request-rate", "2", "--report", "r.html", "--plot-timeline",
			"--steady-state", "--profile", "--warmup-time", "1", "--cooldown-time", "1"}, two...), "0", 0, ""},
		{"too little concurrency", append([]string{"--max-concurrency", "2"}, two...), "0", 0, "--max-concurrency 2 is split between 3 agents"},
		{"bad timeout", []string{"--cluster-timeout-sec", "0"}, "", 0, "argument --cluster-timeout-sec: invalid value 0"},
		{"no token off loopback", []string{"--cluster-size", "2", "--coordinator", "agent-0.stampede:7070"}, "0", 0,
			"--coordinator agent-0.stampede:7070 needs the cluster's shared secret"},
		{"no token on loopback", []string{"--cluster-size", "2", "--coordinator", "127.0.0.1:7070"}, "1", 1, ""},
		{"no token on localhost", []string{"--cluster-size", "2", "--coordinator", "localhost:7070"}, "1", 1, ""},
		{"token flag", []string{"--cluster-size", "2", "--coordinator", "agent-0.stampede:7070", "--cluster-token", "s"}, "1", 1, ""},
		{"token twice", []string{"--cluster-size", "2", "--coordinator", "agent-0.stampede:7070", "--cluster-token", "s", "--cluster-token-file", "f"}, "1", 0,
			"--cluster-token-file: not allowed with argument --cluster-token"},
		{"coordinator without host", []string{"--cluster-size", "2", "--coordinator", ":7070"}, "0", 0, "argument --coordinator: invalid value"},
	} {
		checkAgentParse(t, tc.name, tc.args, env(tc.env), tc.index, tc.err)
	}
}

// checkAgentParse parses args and holds the result to the agent index
// wanted, or to a usage error (exit 2) saying wantErr.
func checkAgentParse(t *testing.T, name string, args []string, getenv func(string) string, index int, wantErr string) {
	t.Helper()
	c, err := parseArgs(args, getenv)
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s: error %v, want one saying %q", name, err, wantErr)
	case wantErr == "" && c.AgentIndex != index:
		t.Errorf("%s: agent %d, want %d", name, c.AgentIndex, index)
	}
	if _, ok := err.(*py.UsageError); wantErr != "" && !ok {
		t.Errorf("%s: %T, want a usage error (exit 2)", name, err)
	}
}

// TestClusterTokenFromEnv: $STAMPEDE_CLUSTER_TOKEN gives the secret when
// no option does, and an option wins over it.
func TestClusterTokenFromEnv(t *testing.T) {
	env := func(k string) string {
		return map[string]string{jobCompletionIndex: "1", plan.ClusterTokenEnv: " from-env\n"}[k]
	}
	args := []string{"--cluster-size", "2", "--coordinator", "agent-0.stampede:7070"}
	c, err := parseArgs(args, env)
	if err != nil || c.ClusterToken != "from-env" {
		t.Fatalf("token %q, %v; want the variable's", c.ClusterToken, err)
	}
	c, err = parseArgs(append(args, "--cluster-token", "flag"), env)
	if err != nil || c.ClusterToken != "flag" {
		t.Fatalf("token %q, %v; want the flag's", c.ClusterToken, err)
	}
	c, err = parseArgs(append(args, "--cluster-token-file", "f"), env)
	if err != nil || c.ClusterToken != "" || c.ClusterTokenFile != "f" {
		t.Fatalf("token %q file %q, %v; want the file alone", c.ClusterToken, c.ClusterTokenFile, err)
	}
}

// env is getenv with k set to v.
func env(getenv func(string) string, k, v string) func(string) string {
	return func(key string) string {
		if key == k {
			return v
		}
		return getenv(key)
	}
}

// TestClusterLocalFlags: the launcher of --cluster-local refuses, before
// any agent starts, what it chooses itself (index, coordinator, secret,
// CPUs) and what no cluster carries out; its agents, given the user's
// command line, take their index, coordinator and secret from the
// environment the launcher gives them, and only agent 0 draws the bar.
func TestClusterLocalFlags(t *testing.T) {
	launcher := func(string) string { return "" }
	agent := func(index string) func(string) string {
		return func(k string) string {
			return map[string]string{plan.LocalAgentEnv: index, plan.LocalCoordinatorEnv: "127.0.0.1:7070", plan.ClusterTokenEnv: "secret"}[k]
		}
	}
	local := []string{"--cluster-local", "--cluster-size", "3"}
	for _, tc := range []struct {
		name   string
		args   []string
		getenv func(string) string
		index  int
		err    string
	}{
		{"launcher", local, launcher, 0, ""},
		{"no size", []string{"--cluster-local"}, launcher, 0, "argument --cluster-local: needs --cluster-size N with N of 2 or more (got 1)"},
		{"with an index", append([]string{"--cluster-index", "1"}, local...), launcher, 0, "argument --cluster-index: not allowed with argument --cluster-local"},
		{"with a coordinator", append([]string{"--coordinator", "127.0.0.1:7070"}, local...), launcher, 0, "argument --coordinator: not allowed with argument --cluster-local"},
		{"with a token", append([]string{"--cluster-token", "s"}, local...), launcher, 0, "not allowed with argument --cluster-local, which draws a fresh secret"},
		{"with CPUs", append([]string{"--cpus", "0"}, local...), launcher, 0, "argument --cpus: not allowed with argument --cluster-local"},
		{"per-token ITL", append([]string{"--per-token-itl"}, local...), launcher, 0, ""},
		{"too little concurrency", append([]string{"--max-concurrency", "2"}, local...), launcher, 0, "--max-concurrency 2 is split between 3 agents"},
		{"agent", local, agent("2"), 2, ""},
		{"agent out of range", local, agent("3"), 0, `$STAMPEDE_CLUSTER_LOCAL_AGENT="3": want an agent index from 0 to 2`},
		{"agent without coordinator", local, func(k string) string { return map[string]string{plan.LocalAgentEnv: "1"}[k] }, 0,
			"$STAMPEDE_CLUSTER_LOCAL_AGENT is set, but not $STAMPEDE_CLUSTER_LOCAL_COORDINATOR"},
		{"agent with a remote coordinator", local, env(agent("1"), plan.LocalCoordinatorEnv, "10.0.0.7:7070"), 0,
			`$STAMPEDE_CLUSTER_LOCAL_COORDINATOR="10.0.0.7:7070": want agent 0's loopback host:port`},
		{"agent with a portless coordinator", local, env(agent("1"), plan.LocalCoordinatorEnv, "127.0.0.1"), 0,
			`$STAMPEDE_CLUSTER_LOCAL_COORDINATOR="127.0.0.1": want agent 0's loopback host:port`},
		{"agent without a token", local, env(agent("1"), plan.ClusterTokenEnv, " "), 0,
			"$STAMPEDE_CLUSTER_LOCAL_AGENT is set, but not $STAMPEDE_CLUSTER_TOKEN"},
		{"agent on localhost", local, env(agent("1"), plan.LocalCoordinatorEnv, "localhost:7070"), 1, ""},
	} {
		checkAgentParse(t, tc.name, tc.args, tc.getenv, tc.index, tc.err)
	}
	// Every agent records the command line it was given, the launcher's,
	// which a rerun starts again.
	args := append([]string{"--model", "m"}, local...)
	for _, index := range []string{"0", "2"} {
		p, err := parseArgs(args, agent(index))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(p.Argv, " "), "--model m --cluster-local --cluster-size 3"; got != want {
			t.Errorf("agent %s records %q, want the launcher's %q", index, got, want)
		}
		if p.Coordinator != "127.0.0.1:7070" || p.ClusterToken != "secret" || p.DisableTqdm != (index != "0") {
			t.Errorf("agent %s: coordinator %q, token %q, no bar %v; want the launcher's, and the bar on agent 0 alone",
				index, p.Coordinator, p.ClusterToken, p.DisableTqdm)
		}
	}
}

// TestRefuseAgentsWhy: each command that cannot run agents is refused
// with its one reason from the table, the same for a command and the Rust
// client's option that does the same.
func TestRefuseAgentsWhy(t *testing.T) {
	for _, command := range []string{"stampede sweep", "stampede slo", "stampede multiturn", "stampede rerun", "--num-runs"} {
		why := whyNoAgentsOf[command]
		local := &plan.Plan{}
		local.ClusterLocal = true
		err := RefuseAgents(local, command)
		if why == "" || err == nil || !strings.Contains(err.Error(), "not allowed with "+command+", which "+why+";") {
			t.Errorf("%s: %v, want its reason %q", command, err, why)
		}
		if err := RefuseAgents(&plan.Plan{}, command); err != nil {
			t.Errorf("%s on one host: %v", command, err)
		}
	}
	for command, option := range map[string]string{"stampede sweep": "--sweep-max-concurrency/--sweep-request-rate", "stampede multiturn": "--multi-turn"} {
		if whyNoAgentsOf[command] != whyNoAgentsOf[option] {
			t.Errorf("%s and %s say why differently: %q, %q", command, option, whyNoAgentsOf[command], whyNoAgentsOf[option])
		}
	}
}
