package datasets

import (
	"strconv"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// maybeOversample is BenchmarkDataset.maybe_oversample_requests: unless
// disabled, when fewer than n requests were sampled it reseeds Python's
// global random with the dataset seed and appends n-len copies of
// random.choice(original), with ids prefix+str(len+i); then every id must be
// unique.
func maybeOversample(reqs []Request, n int, idPrefix string, noOversample bool, seed int64, global *pyrand.Random) ([]Request, error) {
	if noOversample {
		return reqs, nil
	}
	if have := len(reqs); have < n {
		if have == 0 {
			return nil, &py.Error{Type: "IndexError", Msg: "Cannot choose from an empty sequence"}
		}
		global.Seed(seed)
		for i := range n - have {
			r := reqs[global.Choice(have)]
			r.RequestID = idPrefix + strconv.Itoa(have+i)
			reqs = append(reqs, r)
		}
	}
	seen := make(map[string]struct{}, len(reqs))
	for _, r := range reqs {
		if _, dup := seen[r.RequestID]; dup {
			return nil, valueError("Duplicate request_id found in the sampled requests. Please ensure that each request_id is unique.")
		}
		seen[r.RequestID] = struct{}{}
	}
	return reqs, nil
}
