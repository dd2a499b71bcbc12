package datasets

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ServerTokenizer satisfies Tokenizer through the server's own /tokenize
// and /detokenize endpoints (vLLM's API server has both), for runs without
// a local tokenizer file. Every Encode and Decode is one HTTP round trip,
// so it suits dataset building, not per-token work.
//
// The Tokenizer interface has no error returns: a failed call returns dst
// unchanged (Encode) or "" (Decode) and records the error, which Err
// reports; check it after building a dataset.
//
// The endpoints do not report the vocabulary. VocabSize, the special ids
// and the special-token count come from SetVocab when the caller knows
// them (a tokenizer_config.json, a model card); otherwise Probe estimates
// them: NumSpecialTokensToAdd is the length of encode("") with special
// tokens, AllSpecialIDs are those ids, and VocabSize is the smallest id
// /detokenize rejects, found by binary search — which counts added tokens
// too, so it can exceed Hugging Face's vocab_size by their number.
type ServerTokenizer struct {
	baseURL string
	model   string
	client  *http.Client

	vocabSize  int
	numSpecial int
	specialIDs []int32

	mu  sync.Mutex
	err error
	// wide maps the server's ids that do not fit an int32 to the negative
	// stand-ins Encode hands out for them, wideIDs back (stand-in -1-k is
	// wideIDs[k]); real ids are never negative.
	wide    map[string]int32
	wideIDs []json.Number
}

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

// maxProbeVocab bounds the binary search for the vocabulary size; the
// largest vocabularies in use are ~260k.
const maxProbeVocab = 1 << 22

// Probe fills in the vocabulary facts SetVocab did not (see the type's
// doc): about 25 requests.
func (t *ServerTokenizer) Probe(ctx context.Context) error {
	withSpecial, err := t.tokenize(ctx, "", true)
	if err != nil {
		return fmt.Errorf("probing %s/tokenize: %w", t.baseURL, err)
	}
	if t.specialIDs == nil {
		t.numSpecial = len(withSpecial)
		t.specialIDs = t.narrow(nil, withSpecial)
		slices.Sort(t.specialIDs)
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
		if _, err := t.detokenize(ctx, tokenIDs{json.Number(strconv.Itoa(mid))}); err == nil {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	t.vocabSize = lo
	return nil
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

func (t *ServerTokenizer) tokenize(ctx context.Context, text string, addSpecial bool) (tokenIDs, error) {
	return postTokenize(ctx, t.client, t.baseURL, t.model, text, addSpecial)
}

func (t *ServerTokenizer) detokenize(ctx context.Context, ids tokenIDs) (string, error) {
	return postDetokenize(ctx, t.client, t.baseURL, t.model, ids)
}

// tokenIDs are token ids as a server's /tokenize wrote them. Python's ints
// have no width, and servers differ: vLLM's ids fit 32 bits, a simulator's
// dummy tokenizer hashes words to 64-bit ids. Kept as JSON numbers, they
// are counted and sent back to /detokenize verbatim, whatever their size.
type tokenIDs []json.Number

// postTokenize is POST {base}/tokenize {"model", "prompt",
// "add_special_tokens"} → "tokens".
func postTokenize(ctx context.Context, c *http.Client, base, model, text string, addSpecial bool) (tokenIDs, error) {
	body := struct {
		Model            string `json:"model"`
		Prompt           string `json:"prompt"`
		AddSpecialTokens bool   `json:"add_special_tokens"`
	}{model, text, addSpecial}
	var resp struct {
		Tokens tokenIDs `json:"tokens"`
	}
	if err := postJSON(ctx, c, base+"/tokenize", body, &resp); err != nil {
		return nil, err
	}
	return resp.Tokens, nil
}

// postDetokenize is POST {base}/detokenize {"model", "tokens"} → "prompt".
func postDetokenize(ctx context.Context, c *http.Client, base, model string, ids tokenIDs) (string, error) {
	body := struct {
		Model  string   `json:"model"`
		Tokens tokenIDs `json:"tokens"`
	}{model, ids}
	var resp struct {
		Prompt *string `json:"prompt"`
	}
	if err := postJSON(ctx, c, base+"/detokenize", body, &resp); err != nil {
		return "", err
	}
	if resp.Prompt == nil {
		return "", fmt.Errorf("POST %s/detokenize: response has no \"prompt\"", base)
	}
	return *resp.Prompt, nil
}

// maxTokenizeResponse bounds a /tokenize or /detokenize response body; a
// 1M-token prompt's id list is ~8 MB.
const maxTokenizeResponse = 64 << 20

func postJSON(ctx context.Context, c *http.Client, url string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeResponse))
	if err != nil {
		return fmt.Errorf("POST %s: reading response: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d: %s", url, resp.StatusCode, truncate(string(data), 200))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: the server's answer %q is not what vLLM's endpoint returns: %s", url, truncate(string(data), 200),
			JSONProblem(data, err, "a JSON object"))
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

var _ Tokenizer = (*ServerTokenizer)(nil)
