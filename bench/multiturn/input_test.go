package multiturn

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadInputNamesTheBadField(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"not json", "nope", "want a JSON list of conversations or a JSON object"},
		{"roles", `[{"id":"a","messages":[{"role":"assistant","content":"x"}]}]`, `entry 0 (id "a"): messages[0].role "assistant": want "user"`},
		{"duplicate id", `[{"id":"a","messages":[{"role":"user","content":"x"}]},{"id":"a","messages":[{"role":"user","content":"y"}]}]`, `entry 1: id "a" is also entry 0's`},
		{"sharegpt from", `[{"id":"a","conversations":[{"from":"robot","value":"x"}]}]`, `conversations[0].from "robot": want human, gpt or system`},
		{"filetype", `{"filetype":"other"}`, `filetype "other": want "generate_conversations"`},
		{"distribution", `{"filetype":"generate_conversations","num_conversations":2,"text_files":["t"],"prompt_input":{"num_turns":{"distribution":"weird"}},"prompt_output":{}}`,
			`prompt_input.num_turns: distribution "weird": want constant`},
		{"uniform", `{"filetype":"generate_conversations","num_conversations":2,"text_files":["t"],"prompt_input":{"num_turns":{"distribution":"uniform","min":5,"max":2}},"prompt_output":{}}`,
			`prompt_input.num_turns: uniform min 5, max 2: want 0 < min <= max`},
		{"missing section", `{"filetype":"generate_conversations","num_conversations":2,"text_files":["t"],"prompt_input":{"num_turns":{"distribution":"constant","value":2},"prefix_num_tokens":{"distribution":"constant","value":0},"num_tokens":{"distribution":"constant","value":9}}}`,
			`missing section "prompt_output"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "in.json", tc.text)
			_, err := ReadInput(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--input-file") {
				t.Fatalf("error %v; want --input-file and %q", err, tc.want)
			}
		})
	}
}

func TestReadsShareGPTConversations(t *testing.T) {
	path := writeFile(t, t.TempDir(), "in.json", `[{"id":"x","conversations":[{"from":"system","value":"s"},{"from":"human","value":"q1"},{"from":"gpt","value":"a1"},{"from":"human","value":"q2"}]}]`)
	in, err := ReadInput(path)
	if err != nil {
		t.Fatal(err)
	}
	c := in.Conversations[0]
	if c.Turns() != 2 || c.Messages[0].Role != "system" {
		t.Fatalf("%+v: want a system message and 2 turns", c)
	}
	if u, a, ok := c.turnAt(0); u != 1 || a != "a1" || !ok {
		t.Errorf("turn 0: user at %d, answer %q %v", u, a, ok)
	}
	if _, _, ok := c.turnAt(1); ok {
		t.Error("turn 1 has no answer in the file")
	}
}

const synthConfig = `{"filetype":"generate_conversations","num_conversations":6,"text_files":["text.txt"],
 "prompt_input":{"num_turns":{"distribution":"uniform","min":3,"max":7},
   "common_prefix_num_tokens":{"distribution":"constant","value":20},
   "prefix_num_tokens":{"distribution":"lognormal","average":40,"max":100},
   "num_tokens":{"distribution":"uniform","min":60,"max":80}},
 "prompt_output":{"num_tokens":{"distribution":"zipf","alpha":1.5,"max":30}}}`

// Synthetic conversations follow the config's draws and the seed: the
// same seed gives the same conversations, another seed others.
func TestSyntheticConversationsAreSeeded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "text.txt", strings.Repeat("the model is a fast server of tokens and the cache is a queue. ", 200))
	in, err := ReadInput(writeFile(t, dir, "gen.json", synthConfig))
	if err != nil {
		t.Fatal(err)
	}
	tok := mock.NewMockTokenizer()
	a, err := in.Synthetic.Generate(tok, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := in.Synthetic.Generate(tok, 1)
	c, _ := in.Synthetic.Generate(tok, 2)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave other conversations")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("another seed gave the same conversations")
	}
	common := ""
	for i, conv := range a {
		n := len(conv.Messages)
		if n < 4 || n > 8 || n%2 != 0 || checkRoles(conv.Messages) != nil {
			t.Errorf("%s: %d messages; want an even count in [4, 8], alternating", conv.ID, n)
		}
		for k, m := range conv.Messages {
			tokens := len(tok.Encode(nil, m.Content, false))
			if m.Role == "assistant" && (tokens < 1 || tokens > 30) {
				t.Errorf("%s answer %d: %d tokens; want 1..30", conv.ID, k, tokens)
			}
			if m.Role == "user" && k > 0 && tokens < 60 {
				t.Errorf("%s question %d: %d tokens; want at least 60", conv.ID, k, tokens)
			}
		}
		first := conv.Messages[0].Content
		head := first[:strings.Index(first, "[conv-")]
		if i == 0 {
			common = head
		} else if head != common || common == "" {
			t.Errorf("%s: first turn opens %q; want the common prefix %q", conv.ID, head, common)
		}
	}
}

func TestParseArgsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "the following arguments are required: --input-file"},
		{[]string{"--input-file", "f", "--num-clients", "0"}, "argument --num-clients: invalid value \"0\""},
		{[]string{"--input-file", "f", "--num-clients", "3", "--max-active-conversations", "2"}, "fewer than --num-clients"},
		{[]string{"--input-file", "f", "--conversation-sampling", "lifo"}, "argument --conversation-sampling: invalid choice"},
		{[]string{"--input-file", "f", "--history", "x"}, "argument --history: invalid choice"},
		{[]string{"--input-file", "f", "--think-time-sec", "uniform:3,1"}, "argument --think-time-sec: invalid value"},
		{[]string{"--input-file", "f", "--limit-min-tokens", "9", "--limit-max-tokens", "3"}, "more than --limit-max-tokens"},
		{[]string{"--input-file", "f", "--backend", "vllm"}, "multiturn speaks chat completions"},
	} {
		_, err := ParseArgs(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want %q", tc.args, err, tc.want)
		}
	}
}

func TestThinkTimeForms(t *testing.T) {
	for _, s := range []string{"2", "constant:2", "uniform:1,3", "exponential:2", "lognormal:2,0.5"} {
		if _, err := ParseThinkTime(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}
