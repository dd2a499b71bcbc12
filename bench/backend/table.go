package backend

import (
	"fmt"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
	"github.com/stampede-bench/stampede/sse"
)

// The request side of each --backend (spec §b, vllm/benchmarks/lib/
// endpoint_request_func.py): which URL suffix it requires, the JSON body
// it posts and its headers, byte for byte as aiohttp would send
// json.dumps(payload).

// backendAPI describes one request function.
type backendAPI struct {
	kind     apiKind
	name     string   // the API's name in the URL check's message
	suffixes []string // accepted api_url endings, besides "profile"
	// contentType is whether the function sets Content-Type itself; the
	// completions function relies on the HTTP client's JSON default.
	contentType bool
}

// apiKind names a request function.
type apiKind uint8

const (
	completionsKind apiKind = iota
	chatKind
	audioKind
	embeddingsKind
	infinityKind
	poolingKind
	rerankKind
	responsesKind
	anthropicKind
)

var (
	completionsAPI = backendAPI{completionsKind, "OpenAI Completions API", []string{"completions"}, false}
	chatAPI        = backendAPI{chatKind, "OpenAI Chat Completions API", []string{"chat/completions"}, true}
	audioAPI       = backendAPI{audioKind, "OpenAI Audio API", []string{"transcriptions", "translations"}, false}
	embeddingsAPI  = backendAPI{embeddingsKind, "OpenAI Embeddings API", []string{"embeddings"}, true}
	infinityAPI    = backendAPI{infinityKind, "Infinity Embeddings API", []string{"embeddings"}, true}
	poolingAPI     = backendAPI{poolingKind, "vLLM Pooling API", []string{"pooling"}, true}
	rerankAPI      = backendAPI{rerankKind, "vLLM score API", []string{"rerank"}, true}
	responsesAPI   = backendAPI{responsesKind, "OpenAI Responses API", []string{"responses"}, true}
	anthropicAPI   = backendAPI{anthropicKind, "Anthropic Messages API", []string{"messages"}, true}
)

// Backend is one --backend: its row in backends says everything that
// differs between backends, so no code outside this table tests a
// backend's name.
type Backend struct {
	name string
	// api is the request function: endpoint suffix, body encoder and
	// whether it sets Content-Type.
	api backendAPI
	// stream is how the response stream is decoded.
	stream sse.Kind
	// pooling backends are measured as pooling tasks (Python's
	// POOLING_BACKENDS): one response, no tokens streamed.
	pooling bool
	// multipart backends post the request's audio clip as
	// multipart/form-data (BuildAudioRequest) instead of a JSON body.
	multipart bool
	// openAICompatible backends accept sampling parameters and ignore_eos
	// (Python's OPENAI_COMPATIBLE_BACKENDS).
	openAICompatible bool
	// chatInput embeddings backends post a chat message list instead of
	// "input"; each counts as one input sequence.
	chatInput bool
	// mediaText is what replaces the text of a request that carries
	// media (the clip and vlm2vec variants).
	mediaText mediaText
	// multimodal backends take the media datasets' requests (Python's
	// multimodal_backends): chat media parts, or an audio clip.
	multimodal bool
	// endpoint is the --endpoint when the option is not given ("":
	// Python's /v1/completions).
	endpoint string
	// apiKey is where the API key comes from and how it is sent; the zero
	// value is Python's $OPENAI_API_KEY as a Bearer token.
	apiKey apiKeyRule
}

// apiKeyRule says where a backend's API key comes from and goes.
type apiKeyRule struct {
	env    []string // environment variables, the first non-empty wins (nil: OPENAI_API_KEY)
	header string   // the header that carries the key ("": Authorization: Bearer <key>)
}

// mediaText is how an embeddings backend words a request with media.
type mediaText uint8

const (
	keepText    mediaText = iota // the prompt as it is
	blankText                    // "": the media alone is embedded (clip)
	vlm2vecText                  // vlm2vec's instruction, media before text
)

// backends are the --backend choices, in the order Python lists them.
// Adding a backend is one row here (and, for a new request function, its
// backendAPI and body case).
var backends = []Backend{
	{name: "vllm", api: completionsAPI, stream: sse.Completions, openAICompatible: true},
	{name: "openai", api: completionsAPI, stream: sse.Completions, openAICompatible: true},
	{name: "openai-chat", api: chatAPI, stream: sse.Chat, openAICompatible: true, multimodal: true},
	{name: "openai-audio", api: audioAPI, stream: sse.Audio, multipart: true, multimodal: true},
	{name: "openai-embeddings", api: embeddingsAPI, pooling: true},
	{name: "openai-embeddings-chat", api: embeddingsAPI, pooling: true, chatInput: true},
	{name: "openai-embeddings-clip", api: embeddingsAPI, pooling: true, chatInput: true, mediaText: blankText},
	{name: "openai-embeddings-vlm2vec", api: embeddingsAPI, pooling: true, chatInput: true, mediaText: vlm2vecText},
	{name: "infinity-embeddings", api: infinityAPI, pooling: true},
	{name: "infinity-embeddings-clip", api: infinityAPI, pooling: true, mediaText: blankText},
	{name: "vllm-pooling", api: poolingAPI, pooling: true},
	{name: "vllm-rerank", api: rerankAPI, pooling: true},
	// stampede's own, after Python's choices: the Responses API
	// (responses.go) and the Anthropic Messages API (anthropic.go).
	{name: "openai-responses", api: responsesAPI, stream: sse.Responses, openAICompatible: true},
	{name: "anthropic-messages", api: anthropicAPI, stream: sse.Anthropic, openAICompatible: true, multimodal: true,
		endpoint: anthropicEndpoint, apiKey: anthropicKey},
}

// backendNames are the --backend choices in table order.
func backendNames() []string {
	names := make([]string, len(backends))
	for i := range backends {
		names[i] = backends[i].name
	}
	return names
}

// Choices are the --backend rows as the command line needs them (the
// choices and the facts its checks read), in table order: the backends
// argument of cli.Parse and cli.WriteHelp.
func Choices() []plan.Backend {
	out := make([]plan.Backend, len(backends))
	for i, b := range backends {
		out[i] = plan.Backend{Name: b.name, OpenAICompatible: b.openAICompatible, Pooling: b.pooling, Completions: b.api.kind == completionsKind,
			Endpoint: b.endpoint, APIKeyEnv: b.apiKey.env, APIKeyHeader: b.apiKey.header}
	}
	return out
}

// findBackend returns the row of --backend name, or nil.
func findBackend(name string) *Backend {
	for i := range backends {
		if backends[i].name == name {
			return &backends[i]
		}
	}
	return nil
}

func lookupBackend(name string) (*Backend, error) {
	if b := findBackend(name); b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("--backend %q: not a known backend", name)
}

// Of is the row of a parsed --backend; argparse allowed only the table's
// names, and any other name has a row without capabilities.
func Of(name string) *Backend {
	if b := findBackend(name); b != nil {
		return b
	}
	return &Backend{name: name}
}

// Name is the --backend value.
func (b *Backend) Name() string { return b.name }

// Stream is how the backend's response stream is decoded.
func (b *Backend) Stream() sse.Kind { return b.stream }

// Multipart is set for the backends that post the request's audio clip
// as multipart/form-data instead of a JSON body.
func (b *Backend) Multipart() bool { return b.multipart }

// ChatLike is set for the backends that post the Chat Completions API,
// whose server applies the chat template itself.
func (b *Backend) ChatLike() bool { return b.api.kind == chatKind }

// QueryWithDocuments is set for the backends whose request is a query
// with documents (rerank), which a plain prompt cannot stand in for.
func (b *Backend) QueryWithDocuments() bool { return b.api.kind == rerankKind }

// Datasets is what the datasets may know of the backend: its name for
// their messages and the capabilities that change what they build. To
// them the Messages API is chat-like: its server applies the chat
// template and takes tool schemas.
func (b *Backend) Datasets() datasets.Backend {
	return datasets.Backend{
		Name:        b.name,
		ChatLike:    b.ChatLike() || b.api.kind == anthropicKind,
		Multimodal:  b.multimodal,
		EmbedsMedia: b.chatInput || b.mediaText != keepText,
	}
}

// CheckEndpoint is _validate_api_url: apiURL must end with the backend's
// suffix or with "profile". The message is Python's; Python prints the
// suffix set in its process-random order, stampede in source order with
// 'profile' last, e.g.
// "OpenAI Completions API URL must end with one of: {'completions', 'profile'}."
func CheckEndpoint(backend, apiURL string) error {
	b, err := lookupBackend(backend)
	if err != nil {
		return err
	}
	api := b.api
	accepted := append(append([]string(nil), api.suffixes...), "profile")
	for _, s := range accepted {
		if strings.HasSuffix(apiURL, s) {
			return nil
		}
	}
	quoted := make([]string, len(accepted))
	for i, s := range accepted {
		quoted[i] = "'" + s + "'"
	}
	return &py.Error{Type: "ValueError", Msg: fmt.Sprintf("%s URL must end with one of: {%s}.", api.name, strings.Join(quoted, ", "))}
}
