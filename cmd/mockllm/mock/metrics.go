package mock

import (
	"math"
	"strconv"
	"strings"
)

// serveMetrics answers /metrics in the Prometheus text format with the
// vLLM series a benchmark client scrapes. The speculative-decoding
// counters appear only with Config.SpecDecodeTokens > 0; they are derived
// from the generated-token count as if every generated token were one
// draft of SpecDecodeTokens tokens whose position i is accepted at rate
// SpecDecodeAcceptance^(i+1), and token emission does not change; with
// SpecDecodeStream they count the drafts the streams really carried
// (chunks.go).
func (s *Server) serveMetrics(cn *conn, ls *loopState, req *httpRequest, _ int64) bool {
	st := s.Stats()
	labels := `engine="0",model_name="` + escapeLabel(s.cfg.Model) + `"`
	var b []byte
	series := func(name, typ, help string, value float64, extra string) []byte {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, help...)
		b = append(b, "\n# TYPE "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
		return sample(b, name, labels+extra, value)
	}
	b = series("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(st.Running), "")
	b = series("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(st.Waiting), "")
	b = series("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(st.PromptTokens), "")
	b = series("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(st.Tokens), "")
	b = s.appendLoadMetrics(b, labels)
	b = s.appendInfoMetrics(b, labels)
	if k := s.cfg.SpecDecodeTokens; k > 0 {
		drafts := float64(st.Tokens)
		perPos := make([]float64, k)
		if s.cfg.SpecDecodeStream {
			drafts, perPos = s.w.spec.snapshot()
		} else {
			for i := range perPos {
				perPos[i] = math.Floor(drafts * math.Pow(s.cfg.SpecDecodeAcceptance, float64(i+1)))
			}
		}
		accepted := 0.0
		for _, n := range perPos {
			accepted += n
		}
		b = series("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", drafts, "")
		b = series("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", drafts*float64(k), "")
		b = series("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", accepted, "")
		b = series("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter", "Accepted tokens per draft position.", perPos[0], `,position="0"`)
		for i := 1; i < k; i++ {
			b = sample(b, "vllm:spec_decode_num_accepted_tokens_per_pos_total", labels+`,position="`+strconv.Itoa(i)+`"`, perPos[i])
		}
	}
	ls.out = appendResponse(ls.out[:0], 200, "text/plain; version=0.0.4; charset=utf-8", b, req.close)
	cn.send(ls.out, &s.clock)
	if req.close {
		cn.close()
	}
	return false
}

// sample appends one "name{labels} value" line, with the value as Python's
// prometheus_client prints floats ("3.0").
func sample(b []byte, name, labels string, v float64) []byte {
	b = append(b, name...)
	b = append(b, '{')
	b = append(b, labels...)
	b = append(b, "} "...)
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		b = strconv.AppendFloat(b, v, 'f', 1, 64)
	} else {
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, '\n')
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
