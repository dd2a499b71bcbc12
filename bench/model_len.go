package bench

import (
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/internal/py"
)

// fitModelLen is the Rust client's --max-model-len: the requests whose
// prompt and expected output together exceed maxLen tokens are dropped
// (the server would refuse them), the rest keep their order. It says on
// stderr how many went; none left is an error.
func fitModelLen(reqs []datasets.Request, maxLen int, stderr io.Writer) ([]datasets.Request, error) {
	kept := reqs[:0]
	for _, r := range reqs {
		if r.PromptLen+r.ExpectedOutputLen <= maxLen {
			kept = append(kept, r)
		}
	}
	if dropped := len(reqs) - len(kept); dropped > 0 {
		fmt.Fprintf(stderr, "--max-model-len %d: dropped %d of %d requests whose prompt and output tokens exceed it\n",
			maxLen, dropped, len(reqs))
	}
	if len(kept) == 0 {
		return nil, &py.Error{Type: "ValueError", Msg: fmt.Sprintf("--max-model-len %d: every request's prompt and output tokens exceed it", maxLen)}
	}
	return kept, nil
}
