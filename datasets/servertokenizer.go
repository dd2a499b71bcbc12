package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ServerTokenizer satisfies Tokenizer through the server's own /tokenize
// and /detokenize endpoints, for runs without a local tokenizer file. It
// speaks the dialects of vLLM, SGLang, llama.cpp's llama-server and TGI
// (tokenizeDialect), detected once on a known text; Dialect names the one
// found. Every Encode and Decode is one HTTP round trip, so it suits
// dataset building, not per-token work.
//
// The Tokenizer interface has no error returns: a failed call returns dst
// unchanged (Encode) or "" (Decode) and records the error, which Err
// reports; check it after building a dataset. An answer that cannot be
// right (no tokens for a text with words, more tokens than bytes) is such
// an error, never a count.
//
// The endpoints do not report the vocabulary. VocabSize, the special ids
// and the special-token count come from SetVocab when the caller knows
// them (a tokenizer_config.json, a model card); otherwise Probe estimates
// them: NumSpecialTokensToAdd is the length of encode("") with special
// tokens, AllSpecialIDs are those ids, and VocabSize is the smallest id
// /detokenize rejects or decodes to nothing, found by binary search —
// which counts added tokens too, so it can exceed Hugging Face's
// vocab_size by their number. Probe refuses a size its own tokenizer does
// not bear out (checkVocab) rather than hand random prompts ids the model
// does not have.
//
// TGI has no /detokenize: through it Encode works, but Decode and the
// vocabulary probe fail with ErrNoDetokenize, so the datasets that build
// prompts from token ids cannot be sampled.
type ServerTokenizer struct {
	baseURL string
	model   string
	client  *http.Client

	vocabSize  int
	numSpecial int
	specialIDs []int32

	detectOnce sync.Once
	detectErr  error
	// probeIDs are probeText's ids, as detection read them.
	probeIDs tokenIDs

	mu  sync.Mutex
	err error
	// dialect is nil until detection; it turns from vLLM's to SGLang's
	// when /detokenize answers the SGLang way.
	dialect *tokenizeDialect
	// wide maps the server's ids that do not fit an int32 to the negative
	// stand-ins Encode hands out for them, wideIDs back (stand-in -1-k is
	// wideIDs[k]); real ids are never negative.
	wide    map[string]int32
	wideIDs []json.Number
}

// ErrNoDetokenize is wrapped by the errors of a ServerTokenizer whose
// server has no /detokenize (TGI's). Encode still works through it, so
// datasets that only count tokens can be sampled.
var ErrNoDetokenize = errors.New("it has no /detokenize")

// NewServerTokenizer talks to baseURL (scheme://host:port, no path) for
// model; client nil means http.DefaultClient.
func NewServerTokenizer(baseURL, model string, client *http.Client) *ServerTokenizer {
	if client == nil {
		client = http.DefaultClient
	}
	return &ServerTokenizer{baseURL: strings.TrimRight(baseURL, "/"), model: model, client: client}
}

// SetVocab fixes what the endpoints cannot tell: Hugging Face's vocab_size,
// num_special_tokens_to_add() and all_special_ids.
func (t *ServerTokenizer) SetVocab(vocabSize, numSpecial int, specialIDs []int32) {
	t.vocabSize, t.numSpecial, t.specialIDs = vocabSize, numSpecial, specialIDs
}

// Dialect names the /tokenize dialect the server speaks ("vllm",
// "sglang", "llama.cpp" or "tgi"); "" before the first call or Probe has
// detected it, or when detection failed.
func (t *ServerTokenizer) Dialect() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dialect == nil {
		return ""
	}
	return t.dialect.name
}

// maxProbeVocab bounds the binary search for the vocabulary size; the
// largest vocabularies in use are ~260k, so a server that decodes every
// id below it decodes ids that mean nothing.
const maxProbeVocab = 1 << 22

// Probe detects the dialect and fills in the vocabulary facts SetVocab did
// not (see the type's doc): about 30 requests. It fails rather than guess:
// when /detokenize does not undo /tokenize on probeText, when the
// vocabulary size cannot be told (the server decodes every id up to
// maxProbeVocab, or its tokenizer never hands back the top ids it
// decodes), and, wrapping ErrNoDetokenize, when the server has no
// /detokenize.
func (t *ServerTokenizer) Probe(ctx context.Context) error {
	d, err := t.detected(ctx)
	if err != nil {
		return err
	}
	withSpecial, err := t.tokenize(ctx, "", true)
	if err != nil {
		return fmt.Errorf("probing the special tokens: %w", err)
	}
	if t.specialIDs == nil {
		t.numSpecial = len(withSpecial)
		t.specialIDs = t.narrow(nil, withSpecial)
		slices.Sort(t.specialIDs)
	}
	if !d.detokenizes() {
		return t.noDetokenize(d)
	}
	if err := t.checkRoundTrip(ctx); err != nil {
		return err
	}
	if t.vocabSize > 0 {
		return nil
	}
	if _, err := t.detokenize(ctx, tokenIDs{"0"}); err != nil {
		return fmt.Errorf("probing %s/detokenize: %w", t.baseURL, err)
	}
	lo, hi := 1, maxProbeVocab // id lo-1 decodes; find the first id that does not
	for lo < hi {
		mid := lo + (hi-lo)/2
		ok, err := t.decodes(ctx, mid)
		if err != nil {
			return fmt.Errorf("probing %s/detokenize: %w", t.baseURL, err)
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo >= maxProbeVocab {
		return fmt.Errorf("probing %s/detokenize: the server decodes every token id up to %d, so its vocabulary size cannot be told "+
			"and random prompts would be built of ids the model does not have; pass --tokenizer PATH (the served model's tokenizer) instead",
			t.baseURL, maxProbeVocab)
	}
	if err := t.checkVocab(ctx, lo); err != nil {
		return err
	}
	t.vocabSize = lo
	return nil
}

// decodes reports whether /detokenize takes id for a token: it answers
// 200 with some text. Servers that skip unknown ids (Hugging Face's fast
// tokenizers do) answer those with nothing.
func (t *ServerTokenizer) decodes(ctx context.Context, id int) (bool, error) {
	text, err := t.detokenize(ctx, tokenIDs{json.Number(strconv.Itoa(id))})
	var rejected *httpStatusError
	switch {
	case errors.As(err, &rejected):
		return false, nil
	case err != nil:
		return false, err
	}
	return text != "", nil
}

// checkRoundTrip holds /detokenize to undoing /tokenize: probeText's ids
// decoded and tokenized again are as many, which is what building a
// prompt of a given length from ids relies on.
func (t *ServerTokenizer) checkRoundTrip(ctx context.Context) error {
	text, err := t.detokenize(ctx, t.probeIDs)
	if err != nil {
		return fmt.Errorf("probing %s/detokenize: %w", t.baseURL, err)
	}
	again, err := t.tokenize(ctx, text, false)
	if err != nil {
		return fmt.Errorf("probing %s/tokenize: %w", t.baseURL, err)
	}
	if len(again) != len(t.probeIDs) {
		return fmt.Errorf("probing %s: the server's /detokenize does not undo its /tokenize: %q is %d tokens, which decode to %q, "+
			"which is %d tokens; pass --tokenizer PATH (the served model's tokenizer) instead", t.baseURL, probeText, len(t.probeIDs), text, len(again))
	}
	return nil
}

// vocabSample is how many ids checkVocab decodes.
const vocabSample = 64

// checkVocab holds a probed vocabulary size to what the server's own
// tokenizer does. It decodes up to vocabSample ids from the top eighth of
// [0, vocab) together and tokenizes the text back: with the right size
// some of the tokens come back as themselves, so some ids land in that
// eighth again; with a size past the real vocabulary, every id the
// tokenizer hands out lies below its real size, and none does. It also
// wants probeText's ids below vocab.
func (t *ServerTokenizer) checkVocab(ctx context.Context, vocab int) error {
	for _, id := range t.probeIDs {
		if n, err := strconv.ParseInt(string(id), 10, 64); err != nil || n >= int64(vocab) {
			return fmt.Errorf("probing %s/detokenize: the server rejects ids from %d on, but /tokenize hands out %s; "+
				"pass --tokenizer PATH (the served model's tokenizer) instead", t.baseURL, vocab, id)
		}
	}
	top := vocab - max(vocab/8, 1)
	special := make(map[int]bool, len(t.specialIDs))
	for _, id := range t.specialIDs {
		special[int(id)] = true
	}
	var sample tokenIDs
	step := max((vocab-top)/vocabSample, 1)
	for id := top; id < vocab; id += step {
		if !special[id] {
			sample = append(sample, json.Number(strconv.Itoa(id)))
		}
	}
	if len(sample) == 0 {
		return nil // nothing but special tokens up there
	}
	text, err := t.detokenize(ctx, sample)
	if err != nil {
		return fmt.Errorf("probing %s/detokenize: %w", t.baseURL, err)
	}
	back, err := t.tokenize(ctx, text, false)
	if err != nil && text != "" {
		return fmt.Errorf("probing %s/tokenize: %w", t.baseURL, err)
	}
	for _, id := range back {
		if n, err := strconv.ParseInt(string(id), 10, 64); err == nil && n >= int64(top) {
			return nil
		}
	}
	return fmt.Errorf("probing %s/detokenize: the server decodes ids up to %d, but none of ids %d..%d comes back from /tokenize "+
		"as an id from that range: the vocabulary is smaller than /detokenize lets on; pass --tokenizer PATH (the served model's tokenizer) instead",
		t.baseURL, vocab-1, top, vocab-1)
}

// detected returns the server's dialect, detecting it on the first call.
func (t *ServerTokenizer) detected(ctx context.Context) (*tokenizeDialect, error) {
	t.detectOnce.Do(func() {
		d, answer, spans, err := detectDialect(ctx, t.client, t.baseURL, t.model, probeText)
		if err != nil {
			t.detectErr = err
			return
		}
		t.probeIDs = idsAt(answer, spans)
		t.mu.Lock()
		t.dialect = d
		t.mu.Unlock()
	})
	if t.detectErr != nil {
		return nil, t.detectErr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dialect, nil
}

func (t *ServerTokenizer) noDetokenize(d *tokenizeDialect) error {
	return fmt.Errorf("%s/tokenize speaks %s's dialect, and %w: the datasets that build prompts from token ids "+
		"(random, random-mm, random-rerank, prefix_repetition, burstgpt) cannot be sampled through it, nor can its vocabulary size be probed; "+
		"pass --tokenizer PATH (the served model's tokenizer) instead", t.baseURL, d.name, ErrNoDetokenize)
}

// Err is the first error an Encode or Decode hit.
func (t *ServerTokenizer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *ServerTokenizer) fail(err error) {
	t.mu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.mu.Unlock()
}

// Encode returns the server's ids; one beyond int32 (a server whose ids
// are 64-bit hashes) comes back as a negative stand-in that Decode sends
// back as the server wrote it, so counts and round trips stay exact.
func (t *ServerTokenizer) Encode(dst []int32, text string, addSpecial bool) []int32 {
	ids, err := t.tokenize(context.Background(), text, addSpecial)
	if err != nil {
		t.fail(err)
		return dst
	}
	return t.narrow(dst, ids)
}

// Decode ignores skipSpecial: /detokenize has no such switch and decodes
// with the server's default.
func (t *ServerTokenizer) Decode(ids []int32, skipSpecial bool) string {
	wire, err := t.widen(ids)
	if err == nil {
		var s string
		if s, err = t.detokenize(context.Background(), wire); err == nil {
			return s
		}
	}
	t.fail(err)
	return ""
}

// narrow appends ids to dst as int32s, standing in for the wide ones.
func (t *ServerTokenizer) narrow(dst []int32, ids tokenIDs) []int32 {
	for _, id := range ids {
		if n, err := strconv.ParseInt(string(id), 10, 32); err == nil && n >= 0 {
			dst = append(dst, int32(n))
			continue
		}
		t.mu.Lock()
		stand, ok := t.wide[string(id)]
		if !ok {
			if t.wide == nil {
				t.wide = make(map[string]int32)
			}
			stand = int32(-1 - len(t.wideIDs))
			t.wide[string(id)] = stand
			t.wideIDs = append(t.wideIDs, id)
		}
		t.mu.Unlock()
		dst = append(dst, stand)
	}
	return dst
}

// widen is narrow's inverse: the ids as the server wrote them.
func (t *ServerTokenizer) widen(ids []int32) (tokenIDs, error) {
	wire := make(tokenIDs, len(ids))
	for i, id := range ids {
		if id >= 0 {
			wire[i] = json.Number(strconv.Itoa(int(id)))
			continue
		}
		t.mu.Lock()
		k := int(-1 - id)
		ok := k < len(t.wideIDs)
		if ok {
			wire[i] = t.wideIDs[k]
		}
		t.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("decode: token id %d was not returned by %s/tokenize", id, t.baseURL)
		}
	}
	return wire, nil
}

func (t *ServerTokenizer) VocabSize() int             { return t.vocabSize }
func (t *ServerTokenizer) NumSpecialTokensToAdd() int { return t.numSpecial }
func (t *ServerTokenizer) AllSpecialIDs() []int32     { return t.specialIDs }

// tokenize is one /tokenize call in the server's dialect; an answer
// whose count cannot be text's is an error.
func (t *ServerTokenizer) tokenize(ctx context.Context, text string, addSpecial bool) (tokenIDs, error) {
	d, err := t.detected(ctx)
	if err != nil {
		return nil, err
	}
	var body, answer bytes.Buffer
	d.appendTokenize(&body, t.model, text, addSpecial)
	url := t.baseURL + "/tokenize"
	status, err := exchange(ctx, t.client, url, body.Bytes(), &answer)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, &httpStatusError{url: url, status: status, answer: bytes.Clone(answer.Bytes())}
	}
	spans, err := d.scanIDs(nil, answer.Bytes())
	if err != nil {
		return nil, d.wrong(url, status, answer.Bytes(), err.Error())
	}
	if why := countProblem(len(spans), text); why != "" {
		return nil, d.wrong(url, status, answer.Bytes(), why)
	}
	return idsAt(answer.Bytes(), spans), nil
}

// detokenize is one /detokenize call in the server's dialect.
func (t *ServerTokenizer) detokenize(ctx context.Context, ids tokenIDs) (string, error) {
	d, err := t.detected(ctx)
	if err != nil {
		return "", err
	}
	if !d.detokenizes() {
		return "", t.noDetokenize(d)
	}
	var body, answer bytes.Buffer
	d.openDetokenize(&body, t.model)
	for i, id := range ids {
		if i > 0 {
			body.WriteString(", ")
		}
		body.WriteString(string(id))
	}
	body.WriteString(`]}`)
	url := t.baseURL + "/detokenize"
	status, err := exchange(ctx, t.client, url, body.Bytes(), &answer)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", &httpStatusError{url: url, status: status, answer: bytes.Clone(answer.Bytes())}
	}
	text, speaker, err := d.readText(answer.Bytes())
	if err != nil {
		return "", d.wrong(url, status, answer.Bytes(), err.Error())
	}
	if speaker != d {
		t.mu.Lock()
		t.dialect = speaker
		t.mu.Unlock()
	}
	return text, nil
}

// tokenIDs are token ids as a server's /tokenize wrote them. Python's ints
// have no width, and servers differ: vLLM's ids fit 32 bits, a simulator's
// dummy tokenizer hashes words to 64-bit ids. Kept as JSON numbers, they
// are counted and sent back to /detokenize verbatim, whatever their size.
type tokenIDs []json.Number

// idsAt are the ids at spans of answer.
func idsAt(answer []byte, spans [][2]int32) tokenIDs {
	ids := make(tokenIDs, len(spans))
	for i, sp := range spans {
		ids[i] = json.Number(answer[sp[0]:sp[1]])
	}
	return ids
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

var _ Tokenizer = (*ServerTokenizer)(nil)
