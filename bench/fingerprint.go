package bench

import (
	"context"
	"fmt"
	"os"

	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/report"
)

// fingerprint is the phase before the clock starts that asks the server
// about itself and notes the client and the data (report.Fingerprint),
// and what a rerun needs (report.Manifest), for the sidecar. It sends a
// few control requests and reads the dataset once to hash it; none of it
// runs while requests are measured. A dataset that cannot be hashed only
// leaves its hash out: sampling has read it already. A run that saves no
// result has no sidecar to keep them in, and skips the phase.
func (r *run) fingerprint(ctx context.Context, model endpoint.Model, tok *endpoint.Tokenizer) {
	c := r.cfg
	if !c.SaveResult && !c.AppendResult {
		return
	}
	m := &report.Manifest{Argv: c.Argv, Seed: c.Seed, Targets: c.Origins()}
	if tok != nil {
		m.TokenizerSHA256, m.Tokenizer = tok.SHA256, tok.ID
	}
	if c.DatasetPath != "" {
		if _, err := os.Stat(c.DatasetPath); err == nil {
			sum, err := endpoint.FileSHA256(c.DatasetPath)
			if err != nil {
				fmt.Fprintf(r.stderr, "WARNING: --dataset-path %s not hashed for the fingerprint: %v\n", c.DatasetPath, err)
			}
			m.DatasetSHA256 = sum
		}
	}
	server := r.server.Fingerprint(ctx, model)
	r.manifest = m
	r.fingerprintFacts = &report.Fingerprint{
		Server: server.Facts, ServerProblems: server.Problems,
		Client: report.ClientFacts(m.DatasetSHA256, m.TokenizerSHA256),
	}
}
