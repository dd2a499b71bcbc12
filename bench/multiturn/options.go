package multiturn

import (
	"fmt"
	"math"
	"strconv"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/search"
	"github.com/stampede-bench/stampede/internal/py"
)

// Options are multiturn's own flags, named after vLLM's
// benchmarks/multi_turn tool where it has one.
type Options struct {
	InputFile              string
	NumClients             int
	MaxActiveConversations int // 0: one per client
	MaxNumRequests         int // 0: no limit
	MaxTurns               int // messages (user and assistant), 0: no limit
	LimitMinTokens         int
	LimitMaxTokens         int // 0: the dataset's answer's length; < 0: none
	Sampling               string
	ThinkTime              *Distribution
	SessionHeader          string
	SendConversationID     bool
	History                string // "server" or "dataset"
	NoEarlyStop            bool
	StatsJSONOutput        string
	OutputFile             string
	// IgnoreEOS is serve's --ignore-eos as given (serve forces it on for
	// its random dataset, which multiturn does not use).
	IgnoreEOS bool
	// NoHistory sends each turn's question alone, without the messages
	// before it (the Rust client's prefix-sharing turns).
	NoHistory bool
	Serve     *plan.Plan
}

// ownFlags are split off before serve's parser sees the rest.
var ownFlags = []search.OwnFlag{
	{Name: "input-file", Value: true}, {Name: "num-clients", Value: true},
	{Name: "max-active-conversations", Value: true}, {Name: "max-num-requests", Value: true},
	{Name: "max-turns", Value: true}, {Name: "limit-min-tokens", Value: true},
	{Name: "limit-max-tokens", Value: true}, {Name: "conversation-sampling", Value: true},
	{Name: "think-time-sec", Value: true}, {Name: "session-id-header", Value: true},
	{Name: "send-conversation-id"}, {Name: "history", Value: true}, {Name: "no-early-stop"},
	{Name: "stats-json-output", Value: true}, {Name: "output-file", Value: true},
}

// Usage is `stampede multiturn --help`.
const Usage = `usage: stampede multiturn --input-file FILE [multiturn options] [serve options]

Drives conversations turn by turn against a chat completions endpoint:
each turn's request carries the conversation so far (the server's own
answers, or the dataset's with --history dataset), sessions are the unit
of concurrency, and TTFT, TPOT, ITL and E2EL are reported per turn index,
where the prefix cache shows. The options follow vLLM's
benchmarks/multi_turn tool; serve's options give the server, the model,
headers, the seed, timeouts, shards and where results go.

multiturn options:
  --input-file FILE               conversations (a JSON list of {"id", "messages"} or
                                  ShareGPT's {"id", "conversations"}), or a synthetic
                                  config ({"filetype": "generate_conversations", ...})
  --num-clients N                 clients sending at once, each one request at a time (default 1)
  --max-active-conversations K    conversations open at once over all clients, K/N per
                                  client, served in turn (default: N, one each)
  --max-num-requests N            stop after N turns in all (default: no limit)
  --max-turns M                   messages per conversation, user and assistant (default: all)
  --limit-max-tokens N            max_tokens of every turn; 0 (default) the dataset
                                  answer's token count; negative: none
  --limit-min-tokens N            min_tokens of every turn (sent when positive)
  --conversation-sampling S       round_robin (default) or random: which of a client's
                                  conversations goes next
  --think-time-sec D              pause between a turn's answer and the next question:
                                  seconds, or constant:V, uniform:MIN,MAX,
                                  exponential:MEAN, lognormal:MEDIAN,SIGMA (default 0)
  --session-id-header NAME        header carrying the conversation id (default
                                  X-Session-ID; "" sends none)
  --send-conversation-id          also put "conversation_id" in each request body
  --history server|dataset        history of answers: the server's streamed ones
                                  (default) or the dataset's
  --no-early-stop                 keep going when one client has run out of work
  --stats-json-output FILE        per-request rows (conversation, turn, times) as JSON
  --output-file FILE              the conversations with the answers they got, as JSON
  --request-rate R                (serve's option) requests per second per client, a
                                  Poisson process as in vLLM's tool (default inf: no pause)

An example synthetic config ships in the repository:
docs/multiturn/generate_multi_turn.json (docs/multiturn.md runs it).

Results: the block on stdout; --save-result saves the summary JSON
(multiturn-*.json in --result-dir, or --result-filename), with a row per
request under --save-detailed.
`

// ParseArgs splits args into multiturn's flags and serve's, which go to
// serve's parser with the chat completions endpoint as the default.
func ParseArgs(args []string) (*Options, error) {
	own, rest, err := search.SplitOwnFlags(args, ownFlags)
	if err != nil {
		return nil, err
	}
	o := &Options{NumClients: 1, Sampling: "round_robin", SessionHeader: "X-Session-ID", History: "server"}
	usage := func(format string, a ...any) error { return &py.UsageError{Msg: fmt.Sprintf(format, a...)} }
	intFlag := func(name string, dst *int, lo int, what string) error {
		v := own[name]
		if v == nil {
			return nil
		}
		n, err := strconv.Atoi(v[0])
		if err != nil || n < lo {
			return usage("argument --%s: invalid value %q: %s", name, v[0], what)
		}
		*dst = n
		return nil
	}
	for _, f := range []struct {
		name string
		dst  *int
		lo   int
		what string
	}{
		{"num-clients", &o.NumClients, 1, "a whole number of clients, 1 or more"},
		{"max-active-conversations", &o.MaxActiveConversations, 1, "a whole number of conversations, 1 or more"},
		{"max-num-requests", &o.MaxNumRequests, 1, "a whole number of requests, 1 or more"},
		{"max-turns", &o.MaxTurns, 1, "a whole number of messages, 1 or more"},
		{"limit-min-tokens", &o.LimitMinTokens, math.MinInt, "a whole number of tokens"},
		{"limit-max-tokens", &o.LimitMaxTokens, math.MinInt, "a whole number of tokens (0: the dataset's, negative: no limit)"},
	} {
		if err := intFlag(f.name, f.dst, f.lo, f.what); err != nil {
			return nil, err
		}
	}
	if v := own["input-file"]; v != nil {
		o.InputFile = v[0]
	}
	if v := own["conversation-sampling"]; v != nil {
		if v[0] != "round_robin" && v[0] != "random" {
			return nil, usage("argument --conversation-sampling: invalid choice: %q (choose from 'round_robin', 'random')", v[0])
		}
		o.Sampling = v[0]
	}
	if v := own["history"]; v != nil {
		if v[0] != "server" && v[0] != "dataset" {
			return nil, usage("argument --history: invalid choice: %q (choose from 'server', 'dataset')", v[0])
		}
		o.History = v[0]
	}
	if v := own["think-time-sec"]; v != nil {
		if o.ThinkTime, err = ParseThinkTime(v[0]); err != nil {
			return nil, &py.UsageError{Msg: err.Error()}
		}
	}
	if v := own["session-id-header"]; v != nil {
		o.SessionHeader = v[0]
	}
	if v := own["stats-json-output"]; v != nil {
		o.StatsJSONOutput = v[0]
	}
	if v := own["output-file"]; v != nil {
		o.OutputFile = v[0]
	}
	o.SendConversationID = own["send-conversation-id"] != nil
	o.NoEarlyStop = own["no-early-stop"] != nil
	if o.InputFile == "" {
		return nil, usage("the following arguments are required: --input-file")
	}
	if o.MaxActiveConversations == 0 {
		o.MaxActiveConversations = o.NumClients
	}
	if o.MaxActiveConversations < o.NumClients {
		return nil, usage("argument --max-active-conversations: %d is fewer than --num-clients %d; each client needs a conversation", o.MaxActiveConversations, o.NumClients)
	}
	if (o.LimitMinTokens > 0) != (o.LimitMaxTokens > 0) && o.LimitMinTokens > 0 {
		return nil, usage("argument --limit-min-tokens: needs --limit-max-tokens too")
	}
	if o.LimitMinTokens > 0 && o.LimitMinTokens > o.LimitMaxTokens {
		return nil, usage("argument --limit-min-tokens: %d is more than --limit-max-tokens %d", o.LimitMinTokens, o.LimitMaxTokens)
	}
	for _, a := range rest {
		if a == "--" {
			break
		}
		if a == "--ignore-eos" || a == "--ignore_eos" {
			o.IgnoreEOS = true
		}
	}
	// Chat completions unless the command line says otherwise (last wins).
	serve := append([]string{"--backend", "openai-chat", "--endpoint", "/v1/chat/completions"}, rest...)
	if o.Serve, err = cli.Parse(serve, backend.Choices()); err == nil {
		err = cli.RefuseRustOptions(o.Serve, "multiturn", true)
	}
	if err == nil {
		err = cli.RefuseAgents(o.Serve, "stampede multiturn")
	}
	if err != nil {
		return nil, err
	}
	if !backend.Of(o.Serve.Backend).ChatLike() {
		return nil, usage("argument --backend: multiturn speaks chat completions; want openai-chat, not %q", o.Serve.Backend)
	}
	return o, nil
}
