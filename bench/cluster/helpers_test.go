package cluster

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/stampede-bench/stampede/metrics"
)

// recordsOf yields recs, a copy of each.
func recordsOf(recs ...PartialRecord) PartialRecords {
	return func(yield func(*PartialRecord) bool) error {
		for i := range recs {
			r := recs[i]
			if !yield(&r) {
				return nil
			}
		}
		return nil
	}
}

// collected is a partial read whole.
type collected struct {
	Header  PartialHeader
	Version int
	Records []PartialRecord
	Probes  []metrics.RequestResult
}

// readWhole reads a partial file's stream whole.
func readWhole(r io.Reader) (*collected, error) {
	p, err := OpenPartial(r)
	if err != nil {
		return nil, err
	}
	recs, err := ReadPartialRecords(p)
	if err != nil {
		return nil, err
	}
	return &collected{Header: p.Header, Version: p.Version, Records: recs, Probes: p.Probes}, nil
}

// partialBytes is p as a partial file holds it.
func partialBytes(t testing.TB, p *Partial) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WritePartial(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gunzip is a partial file's stream, uncompressed.
func gunzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gzipped is b compressed as a partial file is.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// mergeOf writes each partial, opens it and merges them.
func mergeOf(t testing.TB, parts ...*Partial) (*MergedRun, error) {
	t.Helper()
	readers := make([]*PartialReader, len(parts))
	for i, p := range parts {
		r, err := OpenPartial(bytes.NewReader(partialBytes(t, p)))
		if err != nil {
			t.Fatal(err)
		}
		readers[i] = r
	}
	return MergePartials(readers)
}
