package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// alignConcurrency is how many /tokenize calls alignment keeps in flight.
const alignConcurrency = 64

// AlignWithServer is the server-tokenizer alignment `vllm bench serve` runs
// after sampling `random` and `prefix_repetition` prompts (spec §a): when
// the server counts the first prompt's tokens differently from PromptLen,
// every prompt the server finds longer than its PromptLen is replaced by
// the server's detokenization of its first PromptLen tokens. PromptLen is
// left as it is. Requests without a string prompt turn alignment off.
//
// Calls go to baseURL/tokenize and /detokenize with no extra headers, in
// the dialect the server answers the first prompt in (tokenizeDialect;
// vLLM's first, so a vLLM server sees what Python sends). A server that
// does not answer /tokenize in any dialect (no answer, statuses other
// than 200, or 200 answers that are no token list: an HTML page, an SSE
// stream, a completion) gets Python's warning and no alignment; one whose
// /tokenize answers a token list that cannot be right (no tokens for a
// prompt with words, more tokens than bytes) is an error, as is a JSON
// /detokenize answer without text: re-aligning on either would send
// prompts of lengths nobody asked for. A prompt whose exchange fails
// otherwise (answers that are no token list or no JSON included) keeps
// its text, as in Python. TGI, which has no /detokenize, gets the
// mismatch warning and a second one saying prompts stay as sampled. The
// warning lines go to out.
func AlignWithServer(ctx context.Context, client *http.Client, baseURL, modelID string, reqs []Request, out io.Writer) error {
	return (&Aligner{Client: client, BaseURL: baseURL, ModelID: modelID, Out: out}).Align(ctx, reqs)
}

// Aligner is AlignWithServer for requests that come a batch at a time: the
// first batch's first prompt decides (and warns) as AlignWithServer's
// does, and every batch after it is aligned the same way, or not at all.
type Aligner struct {
	Client           *http.Client
	BaseURL, ModelID string
	Out              io.Writer

	decided bool
	dialect *tokenizeDialect // nil: no alignment
	seen    int              // requests of the batches before
}

// Align aligns one batch.
func (a *Aligner) Align(ctx context.Context, reqs []Request) error {
	if len(reqs) == 0 {
		return nil
	}
	for _, r := range reqs {
		if r.Prompt == "" && (r.PromptIDs != nil || r.PromptList != nil || r.ChatMessages != nil) {
			a.decided = true
			a.dialect = nil
			a.seen += len(reqs)
			return nil
		}
	}
	if !a.decided {
		a.decided = true
		d, err := a.decide(ctx, reqs[0])
		if err != nil {
			return err
		}
		a.dialect = d
	}
	base := a.seen
	a.seen += len(reqs)
	if a.dialect == nil {
		return nil
	}
	return alignEach(ctx, a.Client, a.BaseURL, a.ModelID, a.dialect, base, reqs)
}

// decide asks the server about the first prompt: nil when the prompts
// stay as sampled.
func (a *Aligner) decide(ctx context.Context, req Request) (*tokenizeDialect, error) {
	if a.Client == nil {
		a.Client = http.DefaultClient
	}
	out := a.Out
	d, _, first, err := detectDialect(ctx, a.Client, a.BaseURL, a.ModelID, req.Prompt)
	if err != nil {
		var none *noDialectError
		if errors.As(err, &none) && !none.answered {
			fmt.Fprintln(out, "WARNING: /tokenize unavailable, skipping alignment.")
			return nil, nil
		}
		return nil, fmt.Errorf("aligning prompts with the server's tokenizer: %w", err)
	}
	if len(first) == req.PromptLen {
		return nil, nil
	}
	fmt.Fprintf(out, "WARNING: tokenizer mismatch (server=%d, expected=%d), re-aligning prompts.\n", len(first), req.PromptLen)
	if !d.detokenizes() {
		fmt.Fprintf(out, "WARNING: the server speaks %s's /tokenize, which has no /detokenize to cut prompts with; prompts stay as sampled.\n", d.name)
		return nil, nil
	}
	return d, nil
}

// alignEach re-aligns every prompt of reqs in dialect d.
// base is the first request's index in the run.
func alignEach(ctx context.Context, client *http.Client, baseURL, modelID string, d *tokenizeDialect, base int, reqs []Request) error {

	// A fixed set of workers, each with its own buffers: a prompt's
	// /tokenize answer is scanned where it was read, the first PromptLen
	// ids copied from it into the /detokenize body as the server wrote
	// them, so a prompt costs no memory beyond its new text. The first
	// answer that cannot be right stops them all.
	var next atomic.Int64
	var failed atomic.Bool
	var failure error
	var failOnce sync.Once
	var wg sync.WaitGroup
	for range min(alignConcurrency, len(reqs)) {
		wg.Go(func() {
			a := aligner{client: client, base: baseURL, model: modelID, dialect: d}
			for i := int(next.Add(1) - 1); i < len(reqs) && !failed.Load(); i = int(next.Add(1) - 1) {
				r := &reqs[i]
				text, ok, err := a.align(ctx, r.Prompt, r.PromptLen)
				if err != nil {
					failOnce.Do(func() { failure = fmt.Errorf("aligning request %d with the server's tokenizer: %w", base+i, err) })
					failed.Store(true)
					return
				}
				if ok {
					r.Prompt = text
				}
			}
		})
	}
	wg.Wait()
	return failure
}

// aligner is one alignment worker: the dialect it speaks, its request and
// response buffers, and the offsets of the ids in the last /tokenize
// answer.
type aligner struct {
	client      *http.Client
	base, model string
	dialect     *tokenizeDialect
	body        bytes.Buffer
	resp        bytes.Buffer
	ids         [][2]int32
}

// align returns the server's detokenization of prompt's first n tokens
// when the server counts more than n. ok is false when it counts n or
// fewer, or when an exchange failed, which keeps the prompt as Python
// does; err is an answer that cannot be right.
func (a *aligner) align(ctx context.Context, prompt string, n int) (text string, ok bool, err error) {
	d := a.dialect
	a.body.Reset()
	d.appendTokenize(&a.body, a.model, prompt, false)
	url := a.base + "/tokenize"
	status, err := exchange(ctx, a.client, url, a.body.Bytes(), &a.resp)
	if err != nil || status != http.StatusOK {
		return "", false, nil
	}
	a.ids, err = d.scanIDs(a.ids[:0], a.resp.Bytes())
	switch {
	case errors.Is(err, errNotTokenizerAnswer):
		return "", false, nil // as a failed exchange
	case err != nil:
		return "", false, d.wrong(url, status, a.resp.Bytes(), err.Error())
	}
	if why := countProblem(len(a.ids), prompt); why != "" {
		return "", false, d.wrong(url, status, a.resp.Bytes(), why)
	}
	if len(a.ids) <= n {
		return "", false, nil
	}
	a.body.Reset()
	d.openDetokenize(&a.body, a.model)
	for k, span := range a.ids[:n] {
		if k > 0 {
			a.body.WriteString(", ")
		}
		a.body.Write(a.resp.Bytes()[span[0]:span[1]])
	}
	a.body.WriteString(`]}`)
	url = a.base + "/detokenize"
	if status, err = exchange(ctx, a.client, url, a.body.Bytes(), &a.resp); err != nil || status != http.StatusOK {
		return "", false, nil
	}
	text, _, err = d.readText(a.resp.Bytes())
	switch {
	case errors.Is(err, errNotTokenizerAnswer):
		return "", false, nil // as a failed exchange
	case err != nil:
		return "", false, d.wrong(url, status, a.resp.Bytes(), err.Error())
	}
	if text == "" && n > 0 {
		return "", false, d.wrong(url, status, a.resp.Bytes(), fmt.Sprintf("no text for %d token ids", n))
	}
	return text, true, nil
}

// scanTokenIDs appends to dst where each id of a /tokenize answer's
// "tokens" list lies in data, accepting what encoding/json accepts into a
// struct{Tokens []json.Number}, bar answers without a "tokens" member: a
// JSON object whose members named "tokens" (ignoring case; the last one
// counts) are null or lists whose ids are numbers or strings holding one
// (the span is then the string's contents). What is not JSON, not an
// object, or has no "tokens" is no /tokenize answer at all
// (errNotTokenizerAnswer).
func scanTokenIDs(dst [][2]int32, data []byte) ([][2]int32, error) {
	if len(data) > math.MaxInt32 || !json.Valid(data) {
		return dst, notTokenizerAnswer("not JSON")
	}
	s := &scanner{data: data}
	s.space()
	if !s.eat('{') {
		return dst, notTokenizerAnswer("not a JSON object")
	}
	start := len(dst)
	found := false
	err := s.object(func(key []byte) error {
		if !isMember(key, "tokens") {
			s.skip()
			return nil
		}
		found = true
		var err error
		dst, err = s.ids(dst[:start])
		return err
	})
	switch {
	case err != nil:
		return dst[:start], err
	case !found:
		return dst, notTokenizerAnswer(`a JSON object without "tokens"`)
	}
	return dst, nil
}

// object steps through the members of the JSON object whose '{' the
// scanner has just passed, up to and including its '}': member gets each
// name (quoted) with the scanner at the value, and steps over it.
func (s *scanner) object(member func(key []byte) error) error {
	for s.space(); !s.eat('}'); s.space() {
		s.eat(',')
		s.space()
		key := s.str()
		s.space()
		s.eat(':')
		s.space()
		if err := member(key); err != nil {
			return err
		}
	}
	return nil
}

// isMember reports whether a member name (quoted) is name as
// encoding/json matches names: ignoring case, after unescaping.
func isMember(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return len(key) == len(name)+2 && bytes.EqualFold(key[1:len(key)-1], []byte(name))
	}
	var unquoted string
	return json.Unmarshal(key, &unquoted) == nil && strings.EqualFold(unquoted, name)
}

// ids reads a "tokens" value.
func (s *scanner) ids(dst [][2]int32) ([][2]int32, error) {
	if s.eat('n') {
		s.skip()
		return dst, nil // null
	}
	if !s.eat('[') {
		return dst, errors.New(`"tokens" is not a list`)
	}
	for s.space(); !s.eat(']'); s.space() {
		s.eat(',')
		s.space()
		span, err := s.id()
		if err != nil {
			return dst, err
		}
		dst = append(dst, span)
	}
	return dst, nil
}

// id reads one token id: a number, or a string holding one, whose
// contents are then the span.
func (s *scanner) id() ([2]int32, error) {
	from := s.pos
	quoted := s.data[from] == '"'
	s.skip()
	to := s.pos
	for to > from && isSpace(s.data[to-1]) {
		to--
	}
	if quoted {
		from, to = from+1, to-1
	}
	if !isJSONNumber(s.data[from:to]) {
		return [2]int32{}, fmt.Errorf("token id %s is not a number", s.data[from:to])
	}
	return [2]int32{int32(from), int32(to)}, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanner steps through JSON already known to be valid.
type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) space() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

func (s *scanner) eat(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// str steps over a string and returns it, quotes included.
func (s *scanner) str() []byte {
	from := s.pos
	for s.pos++; s.pos < len(s.data) && s.data[s.pos] != '"'; s.pos++ {
		if s.data[s.pos] == '\\' {
			s.pos++
		}
	}
	s.pos++
	return s.data[from:min(s.pos, len(s.data))]
}

// skip steps over one value.
func (s *scanner) skip() {
	depth := 0
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case '"':
			s.str()
		case '{', '[':
			depth++
			s.pos++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			s.pos++
		case ',':
			if depth == 0 {
				return
			}
			s.pos++
		default:
			s.pos++
			continue
		}
		if depth == 0 {
			if c := s.data[s.pos-1]; c == '"' || c == '}' || c == ']' {
				return
			}
		}
	}
}

// isJSONNumber reports whether b is a JSON number, as a json.Number
// must be.
func isJSONNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
