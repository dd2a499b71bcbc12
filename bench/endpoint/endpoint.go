// Package endpoint is the server side of a serve configuration, shared by
// the run and the commands that build their own requests
// (bench/multiturn): the target of --base-url/--endpoint (dial address,
// Host, path, TLS), the control HTTP client (the URL's Basic
// authentication and --header, kept to the base URL's origin: origin.go),
// model discovery (/v1/models), the tokenizer
// as the model has it (with the server's /tokenize standing in), the HTTP
// framing of a request body, the engine's settings, profiling, and how a
// run stops (the hard stop).
package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/backend"
	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/httpwire"
	"github.com/stampede-bench/stampede/internal/py"
)

// Server is the server a serve configuration benchmarks.
type Server struct {
	cfg    *plan.Plan
	target Target
	// frontEnds are --server-urls' targets (nil without them); target is
	// then the first.
	frontEnds []Target
	// control carries the requests around a run (/v1/models, /metrics,
	// profiling, /tokenize): few and off the measured path, so net/http.
	control *http.Client
	// offline: a sampling command's server that the command line did not
	// name; nothing contacts it (SampleOnly).
	offline bool
}

// New resolves cfg's target and builds its control client.
func New(cfg *plan.Plan) (*Server, error) {
	t, err := ParseTarget(cfg.APIURL, cfg.Insecure)
	if err != nil {
		return nil, err
	}
	var frontEnds []Target
	for _, u := range cfg.FrontEndURLs {
		fe, err := ParseTarget(u, cfg.Insecure)
		if err != nil {
			return nil, err
		}
		frontEnds = append(frontEnds, fe)
	}
	if len(frontEnds) > 1 && frontEnds[0].TLS != nil {
		return nil, &py.UsageError{Msg: "argument --server-urls: several https:// front ends are not supported yet (the TLS settings name one server); use http:// URLs, or one https:// URL"}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if t.TLS != nil {
		transport.TLSClientConfig = t.TLS
	}
	rt := originTransport{base: transport, origin: originOfURL(cfg.BaseURL), authorization: cfg.URLAuthorization}
	control := &http.Client{Transport: rt, Timeout: 5 * time.Minute, CheckRedirect: keepCredentialsHome(credentialKeys(cfg))}
	return &Server{cfg: cfg, target: t, frontEnds: frontEnds, control: control}, nil
}

// Control is the client for control requests to the server.
func (s *Server) Control() *http.Client { return s.control }

// Model is the model a run's requests name.
type Model struct {
	// ID is --model, or the first model's root the server listed.
	ID string
	// Name is --served-model-name, or the first model's name the server
	// listed; "" sends ID.
	Name string
}

// DiscoverModel is spec §a step 9: --model, or the server's first model
// from /v1/models, saying so on stdout as Python does.
func (s *Server) DiscoverModel(ctx context.Context, stdout io.Writer) (Model, error) {
	c := s.cfg
	if c.Model != "" {
		return Model{ID: c.Model, Name: c.ServedModelName}, nil
	}
	if s.offline {
		return Model{}, s.offlineModelError()
	}
	fmt.Fprintln(stdout, "Model not specified, fetching first model from server...")
	modelsURL := c.BaseURL + "/v1/models"
	name, root, err := fetchFirstModel(ctx, s.control, modelsURL, s.HeadersFor(modelsURL))
	if err != nil {
		var empty errNoModels
		if errors.As(err, &empty) {
			return Model{}, &py.Error{Type: "ValueError", Msg: fmt.Sprintf("No models found on the server at %s. "+
				"Make sure the server is running and has models loaded.", c.BaseURL)}
		}
		return Model{}, &py.Error{Type: "RuntimeError", Msg: fmt.Sprintf("Failed to fetch models from server at %s. Check that:\n"+
			"1. The server is running\n2. The server URL is correct\nError: %v", modelsURL, err)}
	}
	fmt.Fprintf(stdout, "First model name: %s, first model id: %s\n", pyout.TerminalText(name), pyout.TerminalText(root))
	return Model{ID: root, Name: name}, nil
}

// EncodeRequest is req's whole HTTP request to the target, as --backend's
// request function posts it with serve's headers (Content-Type,
// $OPENAI_API_KEY's bearer token, --header, x-request-id).
func (s *Server) EncodeRequest(req *datasets.Request, p backend.BodyParams) ([]byte, error) {
	return s.EncodeRequestTo(0, req, p)
}

// FrontEnds counts --server-urls' front ends: 1 without them.
func (s *Server) FrontEnds() int { return max(1, len(s.frontEnds)) }

// FrontEndURL is front end k's URL + --endpoint (APIURL without them).
func (s *Server) FrontEndURL(k int) string {
	if len(s.frontEnds) == 0 {
		return s.cfg.APIURL
	}
	return s.cfg.FrontEndURLs[k]
}

// EngineRequest is req as the engine sends it to front end k: its bytes,
// its prompt length and where its pooling answer has its usage.
func (s *Server) EngineRequest(k int, req *datasets.Request, p backend.BodyParams) (engine.Request, error) {
	wire, err := s.EncodeRequestTo(k, req, p)
	if err != nil {
		return engine.Request{}, err
	}
	usage, err := backend.PoolingUsage(s.cfg.Backend, req, p)
	if err != nil {
		return engine.Request{}, err
	}
	return engine.Request{Wire: wire, PromptLen: req.PromptLen, PoolingUsage: usage, FrontEnd: k}, nil
}

// EncodeRequestTo is EncodeRequest to front end k, whose Host header and
// path it carries.
func (s *Server) EncodeRequestTo(k int, req *datasets.Request, p backend.BodyParams) ([]byte, error) {
	contentType, body, err := backend.Body(s.cfg.Backend, req, p)
	if err != nil {
		return nil, err
	}
	hs, err := backend.RequestHeaders(s.cfg.Backend, req, s.cfg.APIKey, s.cfg.Headers)
	if err != nil {
		return nil, err
	}
	if s.cfg.OTLPReceiver != "" && req.RequestID != "" {
		hs = withTraceParent(hs, req.RequestID)
	}
	return s.frameTo(k, contentType, body, hs)
}

// withTraceParent is hs with the W3C traceparent of requestID last, in
// place of a --header traceparent: --otlp-receiver joins the server's span
// by the trace id it derives, so a user's would join nothing.
func withTraceParent(hs []plan.Header, requestID string) []plan.Header {
	out := hs[:0:0]
	for _, h := range hs {
		if !strings.EqualFold(h.Key, "traceparent") {
			out = append(out, h)
		}
	}
	return append(out, plan.Header{Key: "traceparent", Value: httpwire.TraceParent(requestID)})
}

// frame puts body in an HTTP request to the target with headers hs; an
// empty contentType is aiohttp's json= default, which a backend's own
// Content-Type or a --header replaces.
func (s *Server) frame(contentType string, body []byte, hs []plan.Header) ([]byte, error) {
	return s.frameTo(0, contentType, body, hs)
}

// frameTo is frame to front end k.
func (s *Server) frameTo(k int, contentType string, body []byte, hs []plan.Header) ([]byte, error) {
	t := s.target
	if len(s.frontEnds) > 0 {
		t = s.frontEnds[k]
	}
	if contentType == "" {
		contentType = "application/json"
	}
	hreq := httpwire.Request{
		Method: "POST", Host: t.HostHeader, Path: t.Path,
		ContentType: contentType,
		// aiohttp's Basic authentication from --base-url's credentials;
		// cli.Parse refuses them beside an Authorization header.
		Authorization: s.cfg.URLAuthorization,
		Body:          body,
	}
	for _, h := range hs {
		hreq.Headers = append(hreq.Headers, httpwire.Header{Key: h.Key, Value: h.Value})
	}
	if err := hreq.Validate(); err != nil {
		return nil, &py.Error{Type: "ValueError", Msg: err.Error()}
	}
	return httpwire.AppendRequest(nil, &hreq), nil
}

// EngineConfig is serve's engine setting for reqs: the target, the stream
// format, shards, timeouts, kernel stamps and bounds, with every request
// at once (the test run's and warm-ups' schedule); the measured run sets
// its own schedule over it.
func (s *Server) EngineConfig(reqs []engine.Request) engine.Config {
	c := s.cfg
	ec := engine.Config{
		Network: s.target.Network, Address: s.target.Address, TLS: s.target.TLS,
		SourceAddresses: []netip.Addr(c.SourceAddresses),
		FrontEnds:       s.frontEndAddresses(),
		Kind:            backend.Of(c.Backend).Stream(),
		Streaming:       c.TaskType == plan.Generation,
		Requests:        reqs,
		// Test and warm-up requests all go at once.
		RequestRate: math.Inf(1), Burstiness: 1,
		Seed:             int64(c.Seed),
		Shards:           c.Shards,
		CPUs:             []int(c.CPUs),
		ConnectTimeout:   Seconds(c.ConnectTimeoutSec),
		RequestTimeout:   Seconds(c.RequestTimeoutSec),
		CancelGrace:      cancelGrace(c.CancelGraceSec),
		KernelTimestamps: !c.NoKernelTimestamps,
		MaxResponseBytes: int64(c.MaxResponseBytes),
		MaxBufferedBytes: int64(c.MaxBufferedBytes),
	}
	if len(s.frontEnds) == 1 {
		// One --server-urls URL is the target, whatever --base-url says.
		ec.Address, ec.TLS = s.frontEnds[0].Address, s.frontEnds[0].TLS
	}
	if c.MaxConcurrency != nil {
		ec.MaxConcurrency = *c.MaxConcurrency
	}
	return ec
}

// frontEndAddresses are the front ends' "host:port"s, nil for one.
func (s *Server) frontEndAddresses() []string {
	if len(s.frontEnds) < 2 {
		return nil
	}
	out := make([]string, len(s.frontEnds))
	for i, t := range s.frontEnds {
		out[i] = t.Address
	}
	return out
}

// Seconds is a flag's seconds as a duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// cancelGrace is --cancel-grace-sec for the engine, which reads a zero
// grace as "use the default": 0 (or less) asks for in-flight requests to
// be cancelled at once, so it becomes the shortest grace there is.
func cancelGrace(sec float64) time.Duration {
	if sec <= 0 {
		return time.Nanosecond
	}
	return Seconds(sec)
}

// StartProfile is --profile's POST /start_profile before the measured
// run, said on stdout as Python does; failures are silent.
func (s *Server) StartProfile(ctx context.Context, stdout io.Writer) {
	fmt.Fprintln(stdout, "Starting profiler...")
	if u := s.cfg.BaseURL + "/start_profile"; postProfile(ctx, s.control, u, s.HeadersFor(u)) {
		fmt.Fprintln(stdout, "Profiler started")
	}
}

// StopProfile is --profile's POST /stop_profile after the result block.
func (s *Server) StopProfile(ctx context.Context, stdout io.Writer) {
	fmt.Fprintln(stdout, "Stopping profiler...")
	if u := s.cfg.BaseURL + "/stop_profile"; postProfile(ctx, s.control, u, s.HeadersFor(u)) {
		fmt.Fprintln(stdout, "Profiler stopped")
	}
}

// Endpoint is the server with its model and tokenizer resolved, for the
// commands that build their own request bodies (bench/multiturn): all as
// a serve run has them.
type Endpoint struct {
	server    *Server
	model     Model
	tokenizer *Tokenizer
}

// Open resolves cfg's target and model (asking the server's /v1/models
// when --model is not given, as serve does), and loads the tokenizer when
// withTokenizer is set (the server's /tokenize standing in when none can
// be had, with a warning).
func Open(ctx context.Context, cfg *plan.Plan, stdout, stderr io.Writer, withTokenizer bool) (*Endpoint, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	m, err := s.DiscoverModel(ctx, stdout)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{server: s, model: m}
	if withTokenizer {
		if e.tokenizer, err = s.LoadTokenizer(ctx, m.ID, stderr); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Model is the model name requests carry: --served-model-name, else the
// model's id.
func (e *Endpoint) Model() string {
	return backend.BodyParams{Model: e.model.ID, ModelName: e.model.Name}.SentModel()
}

// ModelID is --model, or the first model the server listed.
func (e *Endpoint) ModelID() string { return e.model.ID }

// Tokenizer is the loaded tokenizer; nil unless Open was asked for one.
func (e *Endpoint) Tokenizer() datasets.Tokenizer {
	if e.tokenizer == nil {
		return nil
	}
	return e.tokenizer.Tokenizer
}

// Frame puts a JSON body in a POST to the endpoint with serve's headers
// (Content-Type, $OPENAI_API_KEY's bearer token, --header) and extra after
// them (a key already set is replaced).
func (e *Endpoint) Frame(body []byte, extra ...plan.Header) ([]byte, error) {
	c := e.server.cfg
	hs, err := backend.RequestHeaders(c.Backend, &datasets.Request{}, c.APIKey, append(c.Headers[:len(c.Headers):len(c.Headers)], extra...))
	if err != nil {
		return nil, err
	}
	return e.server.frame("", body, hs)
}

// EngineConfig is serve's engine setting (target, stream format, shards,
// timeouts, kernel stamps, bounds) for n requests, which the caller
// schedules or feeds.
func (e *Endpoint) EngineConfig(n int) engine.Config {
	return e.server.EngineConfig(make([]engine.Request, n))
}
