package endpoint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// ResetPrefixCache is POST /reset_prefix_cache: vLLM drops its cached
// prefixes, so the next run starts cold. vLLM serves the route only in
// dev mode; any answer but 200 is an error naming the status, since a
// sweep that meant to start each point cold must not go on warm. flag is
// the option that asked for it, which the error names.
func (s *Server) ResetPrefixCache(ctx context.Context, flag string) error {
	url := s.cfg.BaseURL + "/reset_prefix_cache"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(nil))
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	for _, h := range s.cfg.Headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := s.control.Do(req)
	if err != nil {
		return fmt.Errorf("%s: POST %s: %w", flag, url, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: POST %s answered %s; vLLM serves it only when started with VLLM_SERVER_DEV_MODE=1",
			flag, url, resp.Status)
	}
	return nil
}
