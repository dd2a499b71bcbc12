package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
)

// The control requests around a run (model discovery, profiling) are few
// and off the measured path, so they use net/http.

// errNoModels is /v1/models answering with an empty list.
type errNoModels struct{}

func (errNoModels) Error() string { return "no models" }

// fetchFirstModel is GET /v1/models with the --header headers only (no
// API key, as in Python): the first model's id and root.
func fetchFirstModel(ctx context.Context, client *http.Client, url string, headers []plan.Header) (id, root string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("%s: HTTP %s", url, resp.Status)
	}
	var list struct {
		Data []struct {
			ID   string `json:"id"`
			Root string `json:"root"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", "", fmt.Errorf("%s: the answer is not an OpenAI model list: %s", url,
			datasets.JSONProblem(body, err, `{"data": [{"id": "model-name", "root": "..."}]}`))
	}
	if len(list.Data) == 0 {
		return "", "", errNoModels{}
	}
	m := list.Data[0]
	if m.Root == "" {
		m.Root = m.ID
	}
	return m.ID, m.Root, nil
}

// postProfile is POST /start_profile or /stop_profile; it reports HTTP
// 200. Failures are silent, as in Python.
func postProfile(ctx context.Context, client *http.Client, url string, headers []plan.Header) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(nil))
	if err != nil {
		return false
	}
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
