package metrics

import "testing"

// gathered is a run gathered from recorders, with its requests copied out
// for the tests to index.
type gathered struct {
	*RunData
	Results []RequestResult
}

// gatherTest gathers n requests from recorders, as the engine does.
func gatherTest(n int, recs ...*Recorder) gathered {
	d, err := Gather(SortOptions{Requests: n}, recs...)
	if err != nil {
		panic(err)
	}
	return gathered{d, d.Log.Collect()}
}

// testSpool is a spool whose records go to a file in chunks of 64 bytes
// when spill is set (a long run's path); nil (the recorder's own, in
// memory) otherwise.
func testSpool(spill bool) *Spool {
	if !spill {
		return nil
	}
	return NewSpool(LogConfig{MemoryBytes: -1, ChunkBytes: 64})
}

// kept returns the records r's spool holds, in the order they ended.
func (r *Recorder) kept() []RequestResult {
	r.Flush()
	r.opts.Spool.sync()
	var out []RequestResult
	var dec recordDecoder
	r.opts.Spool.raw.frames(func(frame []byte) error {
		return eachRecord(frame, func(rec []byte) error {
			var res RequestResult
			if err := dec.decode(rec, &res); err != nil {
				panic(err)
			}
			out = append(out, res)
			return nil
		})
	})
	return out
}

var _ = testing.Verbose
