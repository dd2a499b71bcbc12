package cli

import "github.com/stampede-bench/stampede/bench/plan"

// testBackends stand in for bench's backend table, whose rows cli cannot
// import: the same names in the same order, with the facts the command
// line reads. The help goldens list these names, and bench's
// TestHelpGoldenFromTable renders the help from its table against the same
// goldens, so the two lists cannot drift apart.
var testBackends = []plan.Backend{
	{Name: "vllm", OpenAICompatible: true, Completions: true},
	{Name: "openai", OpenAICompatible: true, Completions: true},
	{Name: "openai-chat", OpenAICompatible: true},
	{Name: "openai-audio"},
	{Name: "openai-embeddings", Pooling: true},
	{Name: "openai-embeddings-chat", Pooling: true},
	{Name: "openai-embeddings-clip", Pooling: true},
	{Name: "openai-embeddings-vlm2vec", Pooling: true},
	{Name: "infinity-embeddings", Pooling: true},
	{Name: "infinity-embeddings-clip", Pooling: true},
	{Name: "vllm-pooling", Pooling: true},
	{Name: "vllm-rerank", Pooling: true},
	{Name: "openai-responses", OpenAICompatible: true},
	{Name: "anthropic-messages", OpenAICompatible: true, Endpoint: "/v1/messages",
		APIKeyEnv: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}, APIKeyHeader: "x-api-key"},
}

// parseArgs is Parse over the fixture with the given environment.
func parseArgs(args []string, getenv func(string) string) (*plan.Plan, error) {
	return ParseEnv(args, testBackends, getenv)
}
