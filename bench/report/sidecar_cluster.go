package report

// SidecarCluster is the sidecar's "cluster" object: how many agents ran
// the run and how each one's clock was put on the shared one.
type SidecarCluster struct {
	Size   int            `json:"size"`
	Agents []SidecarAgent `json:"agents"`
	// MissingAgents are the agents whose partial result did not arrive
	// whole: the run's result covers the others' requests alone.
	MissingAgents []SidecarMissingAgent `json:"missing_agents,omitempty"`
}

// SidecarMissingAgent is an agent that delivered no partial result: its
// share's requests, left out of the result, and why.
type SidecarMissingAgent struct {
	Index    int    `json:"index"`
	Requests int    `json:"requests"`
	Reason   string `json:"reason"`
}

// SidecarAgent is one agent's account.
type SidecarAgent struct {
	Index    int               `json:"index"`
	Requests int               `json:"requests"`
	Clock    SidecarAgentClock `json:"clock"`
	Health   SidecarHealth     `json:"health"`
	// Client is the agent's client fingerprint (ClientFacts' keys), given
	// only when its build or host differs from agent 0's.
	Client map[string]string `json:"client,omitempty"`
}

// SidecarAgentClock is an agent's clock against the coordinator's:
// OffsetNs = agent − coordinator, from the probe with the smallest round
// trip; the true offset lies within ±ErrorBoundNs of it (half that round
// trip). Agent 0 is the coordinator: 0 and 0.
type SidecarAgentClock struct {
	OffsetNs     int64 `json:"offset_ns"`
	ErrorBoundNs int64 `json:"error_bound_ns"`
	MinRTTNs     int64 `json:"min_rtt_ns"`
	Probes       int   `json:"probes"`
	// StartLateNs is how long after the announced start this agent's
	// schedule began, on the shared clock.
	StartLateNs int64 `json:"start_late_ns"`
}

// MergeHealth sums the agents' counts and keeps the worst of their
// extremes; the schedule-lag percentiles are the worst agent's.
func MergeHealth(agents []SidecarHealth) SidecarHealth {
	var h SidecarHealth
	var reads, stamped float64
	var warm *SidecarWarm
	for _, g := range agents {
		h.Shards += g.Shards
		h.ClientCPUSeconds += g.ClientCPUSeconds
		h.LongestLoopTurnMs = max(h.LongestLoopTurnMs, g.LongestLoopTurnMs)
		h.ScheduleLagP50Ms = max(h.ScheduleLagP50Ms, g.ScheduleLagP50Ms)
		h.ScheduleLagP99Ms = max(h.ScheduleLagP99Ms, g.ScheduleLagP99Ms)
		h.ScheduleLagMaxMs = max(h.ScheduleLagMaxMs, g.ScheduleLagMaxMs)
		h.DeadlineLateMaxMs = max(h.DeadlineLateMaxMs, g.DeadlineLateMaxMs)
		h.RequestsSent += g.RequestsSent
		h.TokenEvents += g.TokenEvents
		h.SharedStampEvents += g.SharedStampEvents
		h.SlowConnects += g.SlowConnects
		h.SlowConnectsRetrans += g.SlowConnectsRetrans
		h.DroppedBeforeResponse += g.DroppedBeforeResponse
		h.Reconnects += g.Reconnects
		h.TLSHandshakeTimeouts += g.TLSHandshakeTimeouts
		h.Resent += g.Resent
		h.StoppedReuseShards += g.StoppedReuseShards
		h.FreshBeforeReuse += g.FreshBeforeReuse
		// Coverage weighs each agent by its requests.
		reads += float64(g.RequestsSent)
		stamped += g.KernelRxStampCoverage * float64(g.RequestsSent)
		h.KernelTxStampCoverage += g.KernelTxStampCoverage * float64(g.RequestsSent)
		if w := g.WarmConnections; w != nil {
			if warm == nil {
				warm = &SidecarWarm{}
			}
			warm.Opened += w.Opened
			warm.Failed += w.Failed
			warm.SlowRounds += w.SlowRounds
			warm.LongestHandshakeMs = max(warm.LongestHandshakeMs, w.LongestHandshakeMs)
		}
	}
	if reads > 0 {
		h.KernelRxStampCoverage = stamped / reads
		h.KernelTxStampCoverage /= reads
	}
	h.SharedStampShare = share(h.SharedStampEvents, h.TokenEvents)
	h.WarmConnections = warm
	return h
}
