package mock

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/stampede-bench/stampede/httpwire"
	"github.com/valyala/fastjson"
)

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen int               `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

func (s *Server) serveModels(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	s.marshalReply(cn, ls, req, modelList{Object: "list", Data: []modelCard{{
		ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "vllm",
		Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen,
		Permission: []modelPermission{{
			ID: "modelperm-" + s.hexID(0, 0), Object: "model_permission", Created: s.created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}}})
	return false
}

func (s *Server) serveEmpty(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	s.reply(cn, ls, req, 200, nil)
	return false
}

func (s *Server) serveVersion(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	s.marshalReply(cn, ls, req, struct {
		Version string `json:"version"`
	}{s.cfg.Version})
	return false
}

// parseObject parses a request body that must be a JSON object naming
// this model (or none), answering the error itself when it is not.
func (s *Server) parseObject(cn *conn, ls *loopState, req *httpRequest) (*fastjson.Value, bool) {
	v, aerr := s.parseBody(&ls.parser, req.body)
	if aerr == nil {
		aerr = s.checkModel(v)
	}
	if aerr != nil {
		s.replyAPIError(cn, ls, req, aerr)
		return nil, false
	}
	return v, true
}

// hexID returns 32 hex digits unique to (key, seq) under the seed, the
// shape of vLLM's random_uuid().
func (s *Server) hexID(key, seq uint64) string {
	var b [16]byte
	a, c := mix(s.cfg.Seed, key, saltID), mix(s.cfg.Seed, seq, saltID+1)
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(a>>(8*i)), byte(c>>(8*i))
	}
	return hex.EncodeToString(b[:])
}

func (s *Server) serveCompletions(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveGeneration(cn, ls, req, arrivalNs, kindCompletion)
}

func (s *Server) serveChat(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveGeneration(cn, ls, req, arrivalNs, kindChat)
}

// serveGeneration validates a completions, chat, Responses or Messages
// request, applies any fault that selects it, and hands it to the writer.
func (s *Server) serveGeneration(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64, kind streamKind) bool {
	g := &ls.gen
	chat := kind == kindChat
	var aerr *apiError
	switch kind {
	case kindResponses:
		aerr = s.parseResponses(&ls.parser, req.body, &ls.ids, g)
	case kindMessages:
		aerr = s.parseMessages(&ls.parser, req.body, &ls.ids, g)
	default:
		aerr = s.parseGeneration(&ls.parser, req.body, chat, &ls.ids, g)
	}
	if aerr != nil {
		s.replyGenerationError(cn, ls, req, kind, aerr)
		return false
	}
	st := s.newStream(cn, req, arrivalNs)
	st.kind = kind
	st.streaming, st.includeUsage = g.streaming, g.includeUsage
	// As in vLLM, running usage comes only with include_usage.
	st.continuousUsage = g.includeUsage && g.continuousUsage
	st.promptTokens = append([]int(nil), g.promptTokens...)
	for _, n := range st.promptTokens {
		st.promptTotal += n
	}
	st.outTokens = g.maxTokens
	if s.cfg.OutputLen == OutputUniform && !g.ignoreEOS {
		lo := max(1, g.minTokens)
		span := g.maxTokens - lo + 1
		st.outTokens = lo + int(unitFloat(mix(s.cfg.Seed, st.key, saltOutputLen))*float64(span))
	}
	st.finishReason = "length"
	if st.outTokens < g.maxTokens {
		st.finishReason = "stop"
	}

	genSeq := s.genSeq.Add(1)
	if f := pickFault(s.cfg.Faults, s.cfg.Seed, st.key, genSeq); f != nil {
		s.stats.faults.Add(1)
		switch f.Kind {
		case FaultHTTP500, FaultHTTP429, FaultHTTP503:
			status := f.Kind.status()
			typ := errorType(status)
			if kind == kindMessages {
				typ = anthropicErrorType(status)
			}
			s.replyGenerationError(cn, ls, req, kind, &apiError{status: status, typ: typ, msg: "injected fault: " + f.Kind.String()})
			return false
		case FaultResetBeforeHeaders:
			cn.reset()
			return false
		case FaultConnectionClose:
			st.closeAfter = true
		default:
			st.fault = f
			st.faultAt = f.At
			if st.faultAt < 0 {
				st.faultAt = st.outTokens / 2
			}
			st.faultAt = min(st.faultAt, st.outTokens-1)
		}
	}

	object := "text_completion"
	idPrefix := "cmpl-"
	switch {
	case chat && g.streaming:
		object, idPrefix = "chat.completion.chunk", "chatcmpl-"
	case chat:
		object, idPrefix = "chat.completion", "chatcmpl-"
	}
	st.prefix = s.appendPrefix(nil, idPrefix, object, arrivalNs, st)
	st.prefix = append(st.prefix, `"choices":[`...)
	st.wordSalt = mix(s.cfg.Seed, st.key, saltWords)
	st.phases = s.newPhases(st, arrivalNs)

	// Slow headers come late; a hostile answer writes its own head.
	if st.streaming && (st.fault == nil || (st.fault.Kind != FaultSlowHeaders && !st.fault.Kind.hostile())) {
		ls.out = st.appendHeaders(ls.out[:0])
		st.headersNs, _ = cn.send(ls.out, &s.clock)
		st.headersSent = true
	}
	if s.prefix != nil && (kind == kindCompletion || kind == kindChat) {
		st.cachedTokens = s.admitPrefix(ls, req, st)
	}
	s.schedule(cn, st)
	return true
}

// replyGenerationError answers a generation request with e in its API's
// error shape: vLLM's OpenAI error JSON, or for the Messages API the same
// type and message in the Messages API's shape, as vLLM translates them.
func (s *Server) replyGenerationError(cn *conn, ls *loopState, req *httpRequest, kind streamKind, e *apiError) {
	if kind != kindMessages {
		s.replyAPIError(cn, ls, req, e)
		return
	}
	s.stats.errors.Add(1)
	s.reply(cn, ls, req, e.status, appendAnthropicErrorBody(nil, e.typ, e.msg))
}

// newStream starts a stream for a request about to be scheduled.
func (s *Server) newStream(cn *conn, req *httpRequest, arrivalNs int64) *stream {
	st := &stream{conn: cn, arrivalNs: arrivalNs, closeAfter: req.close, headersDueNs: arrivalNs}
	st.seq = s.schedSeq.Add(1)
	st.key = st.seq
	st.arrival = arrivalKey{seq: st.seq, peer: cn.peer, offset: cn.reqOffset, loopNs: arrivalNs}
	if len(req.requestID) > 0 {
		st.requestID = string(req.requestID)
		st.key = hashKey(req.requestID)
	}
	if s.spans != nil {
		st.traceID, st.traced = httpwire.ParseTraceParent(req.traceparent)
	}
	return st
}

// appendPrefix appends {"id":"<prefix><hex>","object":..,"created":..,"model":..,
func (s *Server) appendPrefix(dst []byte, idPrefix, object string, arrivalNs int64, st *stream) []byte {
	dst = append(dst, `{"id":"`...)
	dst = append(dst, idPrefix...)
	dst = append(dst, s.hexID(st.key, st.seq)...)
	dst = append(dst, `","object":"`...)
	dst = append(dst, object...)
	dst = append(dst, `","created":`...)
	dst = strconv.AppendInt(dst, s.clock.unixSec(arrivalNs), 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, s.model...)
	return append(dst, ',')
}

func (s *Server) schedule(cn *conn, st *stream) {
	s.stats.scheduled.Add(1)
	cn.beginResponse()
	s.w.submit(st)
}

// servePooled schedules a prebuilt embeddings, pooling or rerank response
// to go out after the prefill time of its prompt tokens.
func (s *Server) servePooled(cn *conn, req *httpRequest, st *stream, promptTokens int, body []byte) bool {
	return s.servePooledResponse(cn, st, promptTokens, appendJSONResponse(nil, 200, body, req.close))
}

// servePooledResponse schedules a whole prebuilt pooling response.
func (s *Server) servePooledResponse(cn *conn, st *stream, promptTokens int, response []byte) bool {
	st.kind = kindPooled
	st.promptTokens = []int{promptTokens}
	st.promptTotal = promptTokens
	st.outTokens = 1
	st.pooled = response
	s.schedule(cn, st)
	return true
}

// vector appends a deterministic unit vector for input i of a request as
// a JSON list.
func (s *Server) vector(dst []byte, key uint64, i int) []byte {
	dst = append(dst, '[')
	for d, v := range s.vectorValues(key, i) {
		if d > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendFloat(dst, v, 'g', 8, 64)
	}
	return append(dst, ']')
}

// vectorValues returns the deterministic unit vector for input i of a
// request.
func (s *Server) vectorValues(key uint64, i int) []float64 {
	var norm float64
	vals := make([]float64, s.cfg.EmbeddingDim)
	for d := range vals {
		vals[d] = unitFloat(mix(s.cfg.Seed, key+uint64(i)*0x9e37, uint64(d)<<16)) - 0.5
		norm += vals[d] * vals[d]
	}
	norm = math.Sqrt(norm)
	for d := range vals {
		vals[d] /= norm
	}
	return vals
}

// appendBytesResponse appends vLLM's answer to encoding_format "bytes"
// (withMetadata) or "bytes_only": the vectors as float32 in the machine's
// byte order (little-endian here, vLLM's "native") in a chunked
// application/octet-stream body, as its StreamingResponse sends them; for
// "bytes" a "metadata" header holds, as json.dumps writes it, what the JSON
// answer would say: id, created, model, where each vector lies, and usage.
func (s *Server) appendBytesResponse(dst []byte, st *stream, idPrefix string, arrivalNs int64, inputs, tokens int, withMetadata, closeAfter bool) []byte {
	var body []byte
	for i := range inputs {
		for _, v := range s.vectorValues(st.key, i) {
			body = binary.LittleEndian.AppendUint32(body, math.Float32bits(float32(v)))
		}
	}
	dst = httpwire.AppendStatusLine(dst, 200, httpwire.ReasonPhrase(200))
	dst = httpwire.AppendHeader(dst, "content-type", "application/octet-stream")
	if withMetadata {
		size := 4 * s.cfg.EmbeddingDim
		meta := []byte(`{"id": "`)
		meta = append(meta, idPrefix...)
		meta = append(meta, s.hexID(st.key, st.seq)...)
		meta = append(meta, `", "created": `...)
		meta = strconv.AppendInt(meta, s.clock.unixSec(arrivalNs), 10)
		meta = append(meta, `, "model": `...)
		meta = append(meta, s.model...)
		meta = append(meta, `, "data": [`...)
		for i := range inputs {
			if i > 0 {
				meta = append(meta, ", "...)
			}
			meta = fmt.Appendf(meta, `{"index": %d, "embed_dtype": "float32", "endianness": "native", "start": %d, "end": %d, "shape": [%d]}`,
				i, i*size, (i+1)*size, s.cfg.EmbeddingDim)
		}
		meta = fmt.Appendf(meta, `], "usage": {"prompt_tokens": %d, "total_tokens": %d}}`, tokens, tokens)
		dst = httpwire.AppendHeader(dst, "metadata", string(meta))
	}
	dst = httpwire.AppendHeader(dst, "transfer-encoding", "chunked")
	if closeAfter {
		dst = httpwire.AppendHeader(dst, "connection", "close")
	}
	dst = httpwire.AppendEndOfHeaders(dst)
	if len(body) > 0 {
		dst = httpwire.AppendChunk(dst, body)
	}
	return httpwire.AppendLastChunk(dst)
}

// countInputs counts an embeddings or pooling request's "input" (or chat
// "messages"), returning the number of inputs and their total tokens.
func (s *Server) countInputs(ls *loopState, v *fastjson.Value) (inputs, tokens int, aerr *apiError) {
	if m := v.Get("messages"); m != nil {
		n, aerr := s.countMessages(m, "messages", &ls.ids)
		return 1, n, aerr
	}
	counts, aerr := s.countPrompts(v.Get("input"), "input", true, &ls.ids, ls.gen.promptTokens[:0])
	ls.gen.promptTokens = counts
	for _, n := range counts {
		if n > s.cfg.MaxModelLen {
			return 0, 0, invalid("This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", s.cfg.MaxModelLen, n)
		}
		tokens += n
	}
	return len(counts), tokens, aerr
}

func (s *Server) serveEmbeddings(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveVectors(cn, ls, req, arrivalNs, "embd-", "embedding", "embedding")
}

func (s *Server) servePooling(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	return s.serveVectors(cn, ls, req, arrivalNs, "pool-", "pooling", "data")
}

// serveVectors answers /v1/embeddings and /pooling: {"id","object":"list",
// "created","model","data":[{"index","object",<field>:[...]}],"usage"}.
func (s *Server) serveVectors(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64, idPrefix, object, field string) bool {
	v, ok := s.parseObject(cn, ls, req)
	if !ok {
		return false
	}
	var aerr *apiError
	format := "float"
	if f := v.GetStringBytes("encoding_format"); f != nil {
		format = string(f)
	}
	switch format {
	case "float", "bytes", "bytes_only":
	default:
		aerr = invalid("encoding_format %q is not supported by the mock server; use \"float\", \"bytes\" or \"bytes_only\"", format)
	}
	var inputs, tokens int
	if aerr == nil {
		inputs, tokens, aerr = s.countInputs(ls, v)
	}
	if aerr != nil {
		s.replyAPIError(cn, ls, req, aerr)
		return false
	}
	st := s.newStream(cn, req, arrivalNs)
	if format != "float" {
		return s.servePooledResponse(cn, st, tokens,
			s.appendBytesResponse(nil, st, idPrefix, arrivalNs, inputs, tokens, format == "bytes", req.close))
	}
	body := s.appendPrefix(nil, idPrefix, "list", arrivalNs, st)
	body = append(body, `"data":[`...)
	for i := 0; i < inputs; i++ {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"index":`...)
		body = strconv.AppendInt(body, int64(i), 10)
		body = append(body, `,"object":"`...)
		body = append(body, object...)
		body = append(body, `","`...)
		body = append(body, field...)
		body = append(body, `":`...)
		body = s.vector(body, st.key, i)
		body = append(body, '}')
	}
	body = append(body, `],"usage":{"prompt_tokens":`...)
	body = strconv.AppendInt(body, int64(tokens), 10)
	body = append(body, `,"total_tokens":`...)
	body = strconv.AppendInt(body, int64(tokens), 10)
	body = append(body, `,"completion_tokens":0,"prompt_tokens_details":null}}`...)
	return s.servePooled(cn, req, st, tokens, body)
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Usage   rerankUsage    `json:"usage"`
	Results []rerankResult `json:"results"`
}

type rerankUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type rerankResult struct {
	Index          int            `json:"index"`
	Document       rerankDocument `json:"document"`
	RelevanceScore float64        `json:"relevance_score"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

// serveRerank answers /v1/rerank with vLLM's RerankResponse: results
// sorted by descending relevance_score, cut to top_n when it is given.
func (s *Server) serveRerank(cn *conn, ls *loopState, req *httpRequest, arrivalNs int64) bool {
	v, ok := s.parseObject(cn, ls, req)
	if !ok {
		return false
	}
	query, err := stringField(v, "query")
	if err != nil {
		s.replyAPIError(cn, ls, req, invalid("query: want a string"))
		return false
	}
	docs, err := arrayField(v, "documents")
	if err != nil || len(docs) == 0 {
		s.replyAPIError(cn, ls, req, invalid("documents: want a non-empty list of strings"))
		return false
	}
	topN, err := optInt(v, "top_n", 0)
	if err != nil || topN < 0 {
		s.replyAPIError(cn, ls, req, invalid("top_n: want a non-negative integer"))
		return false
	}
	st := s.newStream(cn, req, arrivalNs)
	queryTokens := len(s.cfg.Tokenizer.Encode(ls.ids[:0], string(query), true))
	resp := rerankResponse{ID: "rerank-" + s.hexID(st.key, st.seq), Model: s.cfg.Model}
	for i, d := range docs {
		text, err := d.StringBytes()
		if err != nil {
			s.replyAPIError(cn, ls, req, invalid("documents[%d]: want a string", i))
			return false
		}
		ls.ids = s.cfg.Tokenizer.Encode(ls.ids[:0], string(text), false)
		resp.Usage.PromptTokens += queryTokens + len(ls.ids)
		resp.Results = append(resp.Results, rerankResult{
			Index:          i,
			Document:       rerankDocument{Text: string(text)},
			RelevanceScore: unitFloat(mix(s.cfg.Seed, hashKey(text)^hashKey(query), saltWords)),
		})
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	sort.SliceStable(resp.Results, func(i, j int) bool {
		return resp.Results[i].RelevanceScore > resp.Results[j].RelevanceScore
	})
	if topN > 0 && topN < len(resp.Results) {
		resp.Results = resp.Results[:topN]
	}
	body, _ := json.Marshal(resp)
	return s.servePooled(cn, req, st, resp.Usage.PromptTokens, body)
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// serveTokenize answers /tokenize for {"prompt", "add_special_tokens"
// (default true), "return_token_strs"} or {"messages"}.
func (s *Server) serveTokenize(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	v, ok := s.parseObject(cn, ls, req)
	if !ok {
		return false
	}
	addSpecial := true
	if f := v.Get("add_special_tokens"); f != nil && f.Type() != fastjson.TypeNull {
		b, err := f.Bool()
		if err != nil {
			s.replyAPIError(cn, ls, req, invalid("add_special_tokens: want true or false"))
			return false
		}
		addSpecial = b
	}
	wantStrs, err := optBool(v, "return_token_strs")
	if err != nil {
		s.replyAPIError(cn, ls, req, invalid("return_token_strs: %v", err))
		return false
	}
	var ids []int32
	switch {
	case v.Exists("prompt"):
		p, err := stringField(v, "prompt")
		if err != nil {
			s.replyAPIError(cn, ls, req, invalid("prompt: want a string"))
			return false
		}
		ids = s.cfg.Tokenizer.Encode(nil, string(p), addSpecial)
	case v.Exists("messages"):
		msgs, _ := arrayField(v, "messages")
		if _, aerr := s.countMessages(v.Get("messages"), "messages", &ls.ids); aerr != nil {
			s.replyAPIError(cn, ls, req, aerr)
			return false
		}
		for _, m := range msgs {
			ids = s.appendContentTokens(ids, m.Get("content"))
		}
	default:
		s.replyAPIError(cn, ls, req, invalid("want a prompt or messages field"))
		return false
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int32{}
	}
	if wantStrs {
		resp.TokenStrs = make([]string, len(ids))
		for i := range ids {
			resp.TokenStrs[i] = s.cfg.Tokenizer.Decode(ids[i:i+1], false)
		}
	}
	s.marshalReply(cn, ls, req, resp)
	return false
}

// appendContentTokens tokenises a chat message content the way
// countMessages counts it.
func (s *Server) appendContentTokens(ids []int32, c *fastjson.Value) []int32 {
	if c == nil {
		return ids
	}
	switch c.Type() {
	case fastjson.TypeString:
		sb, _ := c.StringBytes()
		return s.cfg.Tokenizer.Encode(ids, string(sb), false)
	case fastjson.TypeArray:
		parts, _ := c.Array()
		for _, p := range parts {
			if text := p.GetStringBytes("text"); text != nil {
				ids = s.cfg.Tokenizer.Encode(ids, string(text), false)
			}
		}
	}
	return ids
}

// vocabChecker is implemented by tokenizers that can say whether an id is
// valid; /detokenize rejects ids they do not know.
type vocabChecker interface{ InVocab(id int32) bool }

func (s *Server) serveDetokenize(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	v, ok := s.parseObject(cn, ls, req)
	if !ok {
		return false
	}
	items, err := arrayField(v, "tokens")
	if err != nil {
		s.replyAPIError(cn, ls, req, invalid("tokens: want a list of token ids"))
		return false
	}
	ids := make([]int32, len(items))
	vc, _ := s.cfg.Tokenizer.(vocabChecker)
	for i, it := range items {
		id, err := it.Int()
		if err != nil || id < 0 || id > math.MaxInt32 || (vc != nil && !vc.InVocab(int32(id))) {
			s.replyAPIError(cn, ls, req, invalid("tokens[%d]: %s is not a token id of this tokenizer", i, it))
			return false
		}
		ids[i] = int32(id)
	}
	s.marshalReply(cn, ls, req, struct {
		Prompt string `json:"prompt"`
	}{s.cfg.Tokenizer.Decode(ids, false)})
	return false
}
