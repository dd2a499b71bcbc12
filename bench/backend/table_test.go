package backend

import (
	"slices"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/sse"
)

// TestBackendTable checks the backend rows against Python's own lists
// (vllm/benchmarks/lib/endpoint_request_func.py and serve.py): the choices
// in order, POOLING_BACKENDS, OPENAI_COMPATIBLE_BACKENDS, and the stream
// formats of the generation backends.
func TestBackendTable(t *testing.T) {
	wantChoices := []string{"vllm", "openai", "openai-chat", "openai-audio",
		"openai-embeddings", "openai-embeddings-chat", "openai-embeddings-clip",
		"openai-embeddings-vlm2vec", "infinity-embeddings", "infinity-embeddings-clip",
		"vllm-pooling", "vllm-rerank",
		"openai-responses", "anthropic-messages"} // stampede's own, after Python's
	if got := backendNames(); !slices.Equal(got, wantChoices) {
		t.Errorf("backend choices = %q, want %q", got, wantChoices)
	}
	for i, b := range Choices() {
		if b.Name != wantChoices[i] {
			t.Errorf("command-line backend %d = %q, want %q", i, b.Name, wantChoices[i])
		}
	}
	pooling := wantChoices[4:12]
	openAI := []string{"vllm", "openai", "openai-chat", "openai-responses", "anthropic-messages"}
	streams := map[string]sse.Kind{"vllm": sse.Completions, "openai": sse.Completions, "openai-chat": sse.Chat, "openai-audio": sse.Audio,
		"openai-responses": sse.Responses, "anthropic-messages": sse.Anthropic}
	for _, name := range wantChoices {
		b := findBackend(name)
		if b.pooling != slices.Contains(pooling, name) {
			t.Errorf("%s: pooling = %v", name, b.pooling)
		}
		if b.openAICompatible != slices.Contains(openAI, name) {
			t.Errorf("%s: openAICompatible = %v", name, b.openAICompatible)
		}
		if k, ok := streams[name]; ok && b.stream != k {
			t.Errorf("%s: stream kind %v, want %v", name, b.stream, k)
		}
		if b.multipart != (name == "openai-audio") {
			t.Errorf("%s: multipart = %v", name, b.multipart)
		}
	}
	// The datasets' columns against Python's lists: multimodal_backends,
	// the "embeddings-" family hf accepts media for, and the one chat API;
	// the Messages API (ours) is a chat API with media.
	for _, name := range wantChoices {
		got := Of(name).Datasets()
		want := datasets.Backend{Name: name,
			ChatLike:    name == "openai-chat" || name == "anthropic-messages",
			Multimodal:  name == "openai-chat" || name == "openai-audio" || name == "anthropic-messages",
			EmbedsMedia: strings.Contains(name, "embeddings-"),
		}
		if got != want {
			t.Errorf("%s: datasets see %+v, want %+v", name, got, want)
		}
	}
	if findBackend("tgi") != nil {
		t.Error("an unknown backend has a row")
	}
}
