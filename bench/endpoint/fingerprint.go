package endpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// The server's fingerprint: what it says about itself, asked once before
// the clock starts (never during the measured run), so two results can be
// checked to be like for like. Every fact is a key and its text:
//
//	version                 /version's "version" (vLLM, the mock)
//	model.id, model.root    the model the run names, as /v1/models lists it
//	model.max_model_len     its context length there (vLLM, the mock)
//	header.server           the Server header of /v1/models' answer
//	info.NAME.LABEL         each label of each *_info gauge on /metrics
//	                        (vLLM's cache_config_info: block_size,
//	                        enable_prefix_caching, gpu_memory_utilization…)
//	sglang.KEY, tgi.KEY,    the scalar fields of SGLang's /get_server_info,
//	llamacpp.KEY            TGI's /info and llama.cpp's /props
//
// A server that lacks a route leaves its keys out; what failed otherwise
// is in Problems, so a missing key can be told from a failed question.

// fingerprintTimeout bounds the fingerprint's requests together: a server
// slow to answer them delays the run by this much at most.
const fingerprintTimeout = 10 * time.Second

// maxFingerprintBody bounds each answer read for the fingerprint.
const maxFingerprintBody = 16 << 20

// ServerFingerprint is what the server said about itself.
type ServerFingerprint struct {
	Facts map[string]string
	// Problems are the questions that failed for a reason other than a
	// missing route (a refused connection, an answer that does not parse).
	Problems []string
}

// Fingerprint asks the server for its fingerprint; model is the run's.
func (s *Server) Fingerprint(ctx context.Context, m Model) ServerFingerprint {
	ctx, cancel := context.WithTimeout(ctx, fingerprintTimeout)
	defer cancel()
	fp := ServerFingerprint{Facts: map[string]string{}}
	ask := func(path string, read func(body []byte, h http.Header, facts map[string]string) error) {
		u := s.cfg.BaseURL + path
		body, h, status, err := s.get(ctx, u)
		switch {
		case err != nil:
			fp.Problems = append(fp.Problems, fmt.Sprintf("GET %s: %v", path, err))
		case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		case status != http.StatusOK:
			fp.Problems = append(fp.Problems, fmt.Sprintf("GET %s: HTTP %d", path, status))
		default:
			if err := read(body, h, fp.Facts); err != nil {
				fp.Problems = append(fp.Problems, fmt.Sprintf("GET %s: %v", path, err))
			}
		}
	}
	ask("/version", func(body []byte, _ http.Header, facts map[string]string) error {
		return readVersionFacts(body, facts)
	})
	ask("/v1/models", func(body []byte, h http.Header, facts map[string]string) error {
		if v := h.Get("Server"); v != "" {
			facts["header.server"] = v
		}
		return readModelFacts(body, m, facts)
	})
	ask("/metrics", func(body []byte, _ http.Header, facts map[string]string) error {
		return readInfoFacts(body, facts)
	})
	for _, r := range serverInfoRoutes {
		if isVLLM(fp.Facts) {
			break // vLLM (and the mock) serve none of them
		}
		ask(r.path, func(body []byte, _ http.Header, facts map[string]string) error {
			return readObjectFacts(body, r.prefix, facts)
		})
	}
	return fp
}

// serverInfoRoutes are the other servers' accounts of themselves, each a
// JSON object whose scalar fields become facts under the prefix: SGLang's
// server arguments and version, TGI's model and limits, llama.cpp's
// properties. A server without the route answers 404, which is no problem.
var serverInfoRoutes = []struct{ path, prefix string }{
	{"/get_server_info", "sglang."},
	{"/info", "tgi."},
	{"/props", "llamacpp."},
}

// isVLLM reports whether facts hold vLLM's info gauges.
func isVLLM(facts map[string]string) bool {
	for k := range facts {
		if strings.HasPrefix(k, "info.vllm:") {
			return true
		}
	}
	return false
}

// maxFactLen is the longest fact kept as text; a longer one (a chat
// template) is kept as its SHA-256, which still tells two apart.
const maxFactLen = 256

// readObjectFacts reads a JSON object's scalar fields (strings, numbers,
// booleans; nested objects and lists are left out) as facts under prefix.
func readObjectFacts(body []byte, prefix string, facts map[string]string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	for k, raw := range obj {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || string(raw) == "null" {
			continue
		}
		v := factText(raw)
		if len(v) > maxFactLen {
			sum := sha256.Sum256([]byte(v))
			v = "sha256:" + hex.EncodeToString(sum[:])
		}
		facts[prefix+k] = v
	}
	return nil
}

// get is one control GET with the base origin's headers.
func (s *Server) get(ctx context.Context, url string) ([]byte, http.Header, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, h := range s.HeadersFor(url) {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := s.control.Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFingerprintBody))
	return body, resp.Header, resp.StatusCode, err
}

// readVersionFacts reads /version's {"version": "..."}.
func readVersionFacts(body []byte, facts map[string]string) error {
	var v struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("not a JSON object with a version: %w", err)
	}
	if len(v.Version) > 0 {
		facts["version"] = factText(v.Version)
	}
	return nil
}

// readModelFacts reads the model card of m from /v1/models: the card
// whose id is the name the requests send, else whose root is m's id, else
// the first.
func readModelFacts(body []byte, m Model, facts map[string]string) error {
	var list struct {
		Data []struct {
			ID          string          `json:"id"`
			Root        string          `json:"root"`
			MaxModelLen json.RawMessage `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("not an OpenAI model list: %w", err)
	}
	if len(list.Data) == 0 {
		return nil
	}
	pick := 0
	sent := m.Name
	if sent == "" {
		sent = m.ID
	}
	for i, c := range list.Data {
		if c.ID == sent {
			pick = i
			break
		}
		if c.Root == m.ID {
			pick = i
		}
	}
	c := list.Data[pick]
	facts["model.id"] = c.ID
	if c.Root != "" {
		facts["model.root"] = c.Root
	}
	if len(c.MaxModelLen) > 0 && string(c.MaxModelLen) != "null" {
		facts["model.max_model_len"] = factText(c.MaxModelLen)
	}
	return nil
}

// factText is a JSON value as a fact: a string's text, else the JSON.
func factText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// readInfoFacts reads every *_info gauge of a Prometheus text exposition:
// its labels are the facts (the value, 1, says nothing). A series with a
// label that varies per engine or model (engine="0") keeps the first
// series' labels.
func readInfoFacts(body []byte, facts map[string]string) error {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not a Prometheus exposition: %w", err)
	}
	names := make([]string, 0, len(families))
	for name := range families {
		if strings.HasSuffix(name, "_info") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		mf := families[name]
		if len(mf.GetMetric()) == 0 {
			continue
		}
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			if lp.GetName() == "engine" {
				continue
			}
			facts["info."+name+"."+lp.GetName()] = lp.GetValue()
		}
	}
	return nil
}

// tokenizerSHA256 is the hex SHA-256 of a loaded tokenizer's file: the
// binary cache's key when it has one, else the file at path read again;
// "" when neither can be had.
func tokenizerSHA256(tok *tokenizer.Tokenizer, path string) string {
	if sum, ok := tok.FileSHA256(); ok {
		return hex.EncodeToString(sum[:])
	}
	if path == "" {
		return ""
	}
	sum, err := FileSHA256(path)
	if err != nil {
		return ""
	}
	return sum
}

// TokenizerSHA256 is the hex SHA-256 of the file the tokenizer name (a
// path or hub id) resolves to in mode, as LoadTokenizer would load it,
// without loading it: for a rerun's check before it starts.
func TokenizerSHA256(mode, name string) (string, error) {
	var path string
	var err error
	if mode == "mistral" {
		path, err = tokenizer.ResolveMistral(name, tokenizer.ResolveOptions{})
		if info, serr := os.Stat(path); err == nil && serr == nil && info.IsDir() {
			path = filepath.Join(path, "tekken.json")
		}
	} else {
		path, err = tokenizer.Resolve(name, tokenizer.ResolveOptions{})
	}
	if err != nil {
		return "", err
	}
	return FileSHA256(path)
}

// FileSHA256 is the hex SHA-256 of a file's bytes; of a directory, the
// SHA-256 of its regular files' names (relative, sorted) and each one's
// SHA-256, so a dataset kept as a folder of shards has one hash too.
func FileSHA256(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.IsDir() {
		return fileSum(path)
	}
	var names []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			names = append(names, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, p := range names {
		sum, err := fileSum(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "%s %s\n", sum, strconv.Quote(rel))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
