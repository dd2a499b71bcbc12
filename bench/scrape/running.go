package scrape

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/stampede-bench/stampede/bench/plan"
)

// runningSeries are the levels that count the requests in a server's
// running batch: vLLM's, SGLang's, llama.cpp's and TGI's.
var runningSeries = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing", "tgi_batch_current_size"}

// ReadRunning is the number of requests the server's batch holds now, from
// one GET of its /metrics: the sum of the running-requests gauge over its
// series (one per model or engine). It is an error when the answer has no
// such gauge.
func ReadRunning(ctx context.Context, client *http.Client, url string, headers []plan.Header) (float64, error) {
	a, err := fetch(ctx, client, url, headers)
	if err != nil {
		return 0, err
	}
	n, found := 0.0, false
	for _, p := range a.points {
		if p.typ != "histogram" && slices.Contains(runningSeries, p.name) {
			n += p.value
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s has no running-requests gauge (one of %v)", url, runningSeries)
	}
	return n, nil
}
