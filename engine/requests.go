package engine

// requestSet is what the engine reads of a run's requests beside their
// bytes: how many, and by queue position the dataset index, the prompt
// length (for the requests never sent) and the trace's send time. A
// Store is one; so are Config.Requests.
type requestSet interface {
	Len() int
	index(i int) int
	promptLen(i int) int
	offsetNs(i int) int64
	// frontEndOutside returns a request whose FrontEnd is not below k, or
	// negative; bad is false when there is none.
	frontEndOutside(k int) (index, frontEnd int, bad bool)
	// meanBytes is the mean size of a request's bytes.
	meanBytes() int64
}

var (
	_ requestSet = (*Store)(nil)
	_ requestSet = requestSlice(nil)
)

// requestsOf is cfg's requests: its Store, or its Requests.
func requestsOf(cfg Config) (requestSet, error) {
	if cfg.Store != nil {
		if cfg.Requests != nil || cfg.Feed {
			return nil, errInvalid("a run takes its requests from Requests or from a Store, not both (nor a Store with Feed)")
		}
		return cfg.Store, nil
	}
	return requestSlice(cfg.Requests), nil
}

// requestSlice is Config.Requests.
type requestSlice []Request

func (s requestSlice) Len() int             { return len(s) }
func (s requestSlice) index(i int) int      { return s[i].Index }
func (s requestSlice) promptLen(i int) int  { return s[i].PromptLen }
func (s requestSlice) offsetNs(i int) int64 { return s[i].OffsetNs }

func (s requestSlice) frontEndOutside(k int) (index, frontEnd int, bad bool) {
	for _, q := range s {
		if q.FrontEnd < 0 || q.FrontEnd >= k {
			return q.Index, q.FrontEnd, true
		}
	}
	return 0, 0, false
}

func (s requestSlice) meanBytes() int64 {
	if len(s) == 0 {
		return 0
	}
	var total int64
	for _, q := range s {
		total += int64(len(q.Wire))
	}
	return total / int64(len(s))
}

type errInvalid string

func (e errInvalid) Error() string { return "engine: " + string(e) }
