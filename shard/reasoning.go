package shard

import (
	"github.com/stampede-bench/stampede/metrics"
	"github.com/stampede-bench/stampede/sse"
)

// recordReasoning records what a decoded chunk, received at tsNs, says
// beyond Python's fields: whether its token event carried answer text,
// reasoning or a tool call, the tool calls it opened, and a usage's
// reasoning_tokens. A token event is recorded with Token before.
func recordReasoning(s *metrics.Stream, tsNs int64, c *sse.Chunk) {
	switch {
	case c.Token:
		s.TokenKinds(tsNs, len(c.Text) > 0, c.Reasoning, c.ToolCall)
	case c.HasUsage:
		s.ReasoningTokens(c.ReasoningTokens)
	}
	if c.ToolCallsStarted > 0 {
		s.ToolCallsOpened(c.ToolCallsStarted)
	}
}
