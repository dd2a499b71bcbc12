package endpoint

import (
	"context"
	"time"

	"github.com/stampede-bench/stampede/engine"
)

// SendCopies sends n copies of test (the ready check's and the warm-ups'
// request) through the engine, on one shard when n is 1, each with
// timeout when it is above 0, and returns the first failure's text, ""
// when every copy succeeded.
func (s *Server) SendCopies(ctx context.Context, test engine.Request, n int, timeout time.Duration) (string, error) {
	reqs := make([]engine.Request, n)
	for i := range reqs {
		reqs[i] = test
		reqs[i].Index = i
	}
	ec := s.EngineConfig(reqs)
	if n == 1 {
		ec.Shards = 1
	}
	if timeout > 0 {
		ec.RequestTimeout = timeout
	}
	runner, err := engine.Start(ctx, ec)
	if err != nil {
		return "", err
	}
	res, err := WaitRun(ctx, runner)
	if err != nil {
		return "", err
	}
	defer res.Data.Log.Close()
	for _, rr := range res.Data.Log.All() {
		if !rr.Success {
			return rr.Error, nil
		}
	}
	return "", nil
}
