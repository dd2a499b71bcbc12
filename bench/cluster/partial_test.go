package cluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/metrics"
)

// TestMergeRefusesMismatchedPartials: a missing agent, a duplicate, a
// request on the wrong agent and differing settings are each named.
func TestMergeRefusesMismatchedPartials(t *testing.T) {
	base := func() []*Partial {
		recs := func(idx ...int) []PartialRecord {
			var out []PartialRecord
			for _, i := range idx {
				out = append(out, PartialRecord{RequestResult: metrics.RequestResult{Index: i, Success: true, NumInputSequences: 1}, Counted: -1})
			}
			return out
		}
		settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 1, Burstiness: 1}}, &metrics.ComputeOptions{}, false)
		return []*Partial{
			{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 0, NumRequests: 4, Settings: settings}, Records: recs(0, 2)},
			{Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings}, Records: recs(1, 3)},
		}
	}
	if _, err := MergePartials(base()); err != nil {
		t.Fatalf("well-formed partials: %v", err)
	}
	for _, tc := range []struct {
		name  string
		spoil func([]*Partial) []*Partial
		want  string
	}{
		{"missing agent", func(p []*Partial) []*Partial { return p[:1] }, "agent(s) 1 of 2 are missing"},
		{"duplicate agent", func(p []*Partial) []*Partial { return []*Partial{p[0], p[0]} }, "two partials of agent 0"},
		{"wrong agent", func(p []*Partial) []*Partial { p[1].Records[0].Index = 2; return p }, "agent 1 holds request 2, which is agent 0's"},
		{"missing request", func(p []*Partial) []*Partial { p[1].Records = p[1].Records[:1]; return p }, "request 3 is in no partial"},
		{"other settings", func(p []*Partial) []*Partial { p[1].Header.Settings.Pooling = true; return p }, "settings differ"},
		{"other run", func(p []*Partial) []*Partial { p[1].Header.NumRequests = 5; return p }, "different runs"},
	} {
		_, err := MergePartials(tc.spoil(base()))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParsePartial: partials travel over the network; malformed bytes are
// an error, never a crash or an allocation out of proportion to them.
func FuzzParsePartial(f *testing.F) {
	settings := NewPartialSettings(&pyout.ReportParams{RunSettings: pyout.RunSettings{Backend: "openai", RequestRate: 2, Burstiness: 1}}, &metrics.ComputeOptions{InputAudioSeconds: []float64{}}, true)
	p := &Partial{
		Header: PartialHeader{ClusterSize: 2, ClusterIndex: 1, NumRequests: 4, Settings: settings},
		Records: []PartialRecord{
			{RequestResult: metrics.RequestResult{Index: 1, Success: true, GeneratedText: "hi", ITLNs: []int64{5, -3, 1 << 40},
				Breakdown: metrics.Breakdown{Known: true, NewConn: true, ConnectNs: 3}}, Counted: 2, AudioSec: 1.5},
			{RequestResult: metrics.RequestResult{Index: 3, Error: "boom"}, Counted: -1},
		},
	}
	var buf bytes.Buffer
	if err := WritePartial(&buf, p); err != nil {
		f.Fatal(err)
	}
	raw, err := ReadPartialBytes(&buf)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add([]byte(partialMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePartial(data)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := WritePartial(&out, p); err != nil {
			t.Fatalf("a parsed partial does not write back: %v", err)
		}
		if _, err := ReadPartial(&out); err != nil {
			t.Fatalf("a written partial does not read back: %v", err)
		}
	})
}
