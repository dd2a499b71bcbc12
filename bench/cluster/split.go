package cluster

import (
	"github.com/stampede-bench/stampede/metrics"

	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/report"
)

// SplitOutcome cuts a finished run into the partials of size agents, as
// if agent k had sent the requests whose index i has i mod size = k: the
// records on the run's own clock (offset 0), and as each agent's duration
// the run's. It is how a single-host run is saved with --save-partial
// (size 1), and how the merge is held to computing over all the requests
// at once. facts (nil: none known) give each record's request id and
// expected output length.
func SplitOutcome(o *outcome.Outcome, breakdown bool, health report.SidecarHealth, size int, facts RequestFacts) []*Partial {
	settings := NewPartialSettings(o.Params, &o.Options, breakdown)
	// A run with --per-token-itl tracked every successful stream's running
	// usage; the merge prints the block for such records.
	n := 0
	for _, r := range o.Data.Log.All() {
		n = max(n, r.Index+1)
		if r.ChunkTokens.State != metrics.RunningUntracked {
			settings.PerTokenITL = true
		}
	}
	parts := make([]*Partial, size)
	for k := range parts {
		h := PartialHeader{
			ClusterSize: size, ClusterIndex: k, NumRequests: n, Settings: settings,
			DurationNs: o.Data.DurationNs, RPSChangeEvents: o.Params.RPSChangeEvents,
			Cancelled: o.Cancelled, Health: health,
		}
		if k == 0 {
			h.ServerMessages, h.ServerMessagesRest = o.Data.ServerMessages.Top(maxMessageTexts)
		}
		share := o.Data.Log.Where(func(r *metrics.RequestResult) bool { return r.Index%size == k })
		parts[k] = &Partial{Header: h, Records: newPartialRecords(share, o.Options.CountTokens, o.Options.InputAudioSeconds, facts, nil)}
	}
	return parts
}

// maxMessageTexts is at least as many texts as a run keeps (see
// metrics.ServerMessages), so that Top returns them all.
const maxMessageTexts = 1 << 16
