package metrics

// UsageCheck sets the server's own output token counts beside the ones
// Python's figures use, and names the counts no real answer has. Python's
// numbers stay as Python computes them; this says when to doubt them.
type UsageCheck struct {
	// Requests is the successful requests whose server sent a count;
	// InTokenChunk the ones whose count came only inside a chunk with
	// choices, which Python never reads (it counts their text instead).
	Requests, InTokenChunk int
	// ServerTokens sums the server's counts of those requests, Counted
	// their output lengths as Python's figures take them (OutputLen).
	ServerTokens, Counted int64
	// The counts no answer can have, each counted into Python's figures
	// as given: below zero, zero for an answer that streamed token
	// events, or over the request's
	// max_tokens.
	Negative, ZeroWithText, OverMax OddCount
}

// maxPlausibleTokens bounds the count of a request that sets no
// max_tokens: no model's context holds 2^24 tokens, so a larger count
// (2^31, 2^53+1) is a server's bug, not an answer.
const maxPlausibleTokens = 1 << 24

// OddCount is how many requests carried one kind of odd count, and the
// first of them.
type OddCount struct {
	Requests int
	Example  int   // request index
	Tokens   int64 // the example's count
	Max      int   // the example's max_tokens (OverMax only)
}

func (o *OddCount) add(index int, tokens int64, maxTokens int) {
	if o.Requests == 0 {
		o.Example, o.Tokens, o.Max = index, tokens, maxTokens
	}
	o.Requests++
}

// Odd is how many requests carried an odd count, of any kind.
func (u *UsageCheck) Odd() int {
	return u.Negative.Requests + u.ZeroWithText.Requests + u.OverMax.Requests
}

// Disagree reports whether the server's total and the counted one differ
// by more than 1 % of the counted.
func (u *UsageCheck) Disagree() bool {
	d := u.ServerTokens - u.Counted
	return u.Requests > 0 && 100*max(d, -d) > max(u.Counted, 1)
}

// CheckUsage compares the server's counts of the successful results with
// their output lengths as Python's figures take them (OutputLen with
// count). maxTokens is request i's max_tokens, 0 when it sets none (a
// count over 2^24 is then the odd one).
func CheckUsage(l *Log, count func(string) int, maxTokens func(i int) int) UsageCheck {
	var u UsageCheck
	for _, r := range l.All() {
		if !r.Success || r.ServerUsage == UsageNone {
			continue
		}
		u.Requests++
		if r.ServerUsage == UsageInTokenChunk {
			u.InTokenChunk++
		}
		u.ServerTokens += r.ServerTokens
		u.Counted += int64(r.OutputLen(count))
		limit := 0
		if maxTokens != nil {
			limit = maxTokens(r.Index)
		}
		switch n := r.ServerTokens; {
		case n < 0:
			u.Negative.add(r.Index, n, limit)
		case n == 0:
			// A success had a token event: the server streamed an answer
			// it counts as nothing.
			u.ZeroWithText.add(r.Index, n, limit)
		case limit > 0 && n > int64(limit), limit == 0 && n > maxPlausibleTokens:
			u.OverMax.add(r.Index, n, limit)
		}
	}
	return u
}
