package httpwire

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net/http/httputil"
	"reflect"
	"strings"
	"testing"
)

// responseSeeds are whole responses for FuzzResponseParser's corpus, besides
// the files in testdata/fuzz/FuzzResponseParser.
var responseSeeds = []string{
	ok5,
	ok5 + next,
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nKeep-Alive: max=x, max=\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
	"HTTP/1.1 101 Switching Protocols\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n",
	"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-A: b\r\n c\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nab",
}

// FuzzResponseParser feeds any bytes, split anywhere, to a Parser: it must
// never panic, never break the Handler contract, report only
// *ProtocolErrors, and report the same thing however the bytes are split.
func FuzzResponseParser(f *testing.F) {
	for i, s := range responseSeeds {
		f.Add([]byte(s), uint64(i), i%3 == 0, i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, data []byte, cutSeed uint64, headRequest, closeRead bool) {
		whole := parse(t, data, nil, headRequest, closeRead)
		if whole.Consumed > len(data) {
			t.Fatalf("consumed %d of %d bytes", whole.Consumed, len(data))
		}
		check := func(how string, cuts []int) {
			got := parse(t, data, cuts, headRequest, closeRead)
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("fed %s: got\n%+v\nwant (fed whole)\n%+v", how, got, whole)
			}
		}
		byteCuts := make([]int, 0, len(data))
		for i := 1; i < len(data); i++ {
			byteCuts = append(byteCuts, i)
		}
		check("byte by byte", byteCuts)
		rng := rand.New(rand.NewPCG(cutSeed, uint64(len(data))))
		for range 3 {
			cuts := randomCuts(rng, len(data))
			check("in random pieces", cuts)
		}
	})
}

// chunkedHead starts every FuzzChunkedBody input.
const chunkedHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

// FuzzChunkedBody checks the chunked decoder against net/http's
// (httputil.NewChunkedReader). That reader stops at the last chunk without
// reading trailers, rejects bare LF line ends, caps lines at 4 KiB and
// limits extension overhead, where Parser is lenient (see Parser), so:
//   - whatever net/http decodes, Parser decodes the same way, failing at most
//     in the trailer it goes on to read;
//   - whatever body Parser decodes, net/http decodes too after re-encoding it
//     with AppendChunk, and where net/http rejects the original, its reason is
//     one of the documented leniencies.
func FuzzChunkedBody(f *testing.F) {
	seeds := []string{
		"5\r\nhello\r\n0\r\n\r\n",
		"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
		"A\r\n0123456789\r\n0\r\n\r\n",
		"5\nhello\n0\n\n",
		"5 ;e\r\nhello\r\n0\r\n\r\n",
		"000000000000000005\r\nhello\r\n0\r\n\r\n",
		"zz\r\n",
		"5\r\nhelloX",
		"3\r\nabc\r\n",
		"8000000000000000\r\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, cutSeed uint64) {
		input := append([]byte(chunkedHead), data...)
		rng := rand.New(rand.NewPCG(cutSeed, uint64(len(data))))
		ours := parse(t, input, randomCuts(rng, len(input)), false, false)
		if whole := parse(t, input, nil, false, false); !reflect.DeepEqual(ours, whole) {
			t.Fatalf("fed in pieces: got\n%+v\nwant (fed whole)\n%+v", ours, whole)
		}
		if ours.Err != "" && ours.Part != PartChunked && ours.Part != PartTrailer {
			t.Fatalf("error %q in part %q of a chunked body", ours.Err, ours.Part)
		}

		ref, refErr := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(data)))
		if refErr == nil {
			if ours.Body != string(ref) {
				t.Fatalf("body = %q, net/http decodes %q", ours.Body, ref)
			}
			if ours.Err != "" && ours.Part != PartTrailer {
				t.Fatalf("error %q where net/http decodes %q", ours.Err, ref)
			}
		}
		if !ours.Done {
			return
		}
		reencoded := AppendLastChunk(AppendChunk(nil, []byte(ours.Body)))
		if again, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(reencoded))); err != nil || string(again) != ours.Body {
			t.Fatalf("re-encoded body %q: net/http decodes %q, %v", ours.Body, again, err)
		}
		if refErr != nil && !lenientAbout(refErr, data) {
			t.Fatalf("decoded %q where net/http rejects the body: %v", ours.Body, refErr)
		}
	})
}

// lenientAbout reports whether net/http's chunked reader rejected data for
// a reason Parser deliberately accepts.
func lenientAbout(err error, data []byte) bool {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "bare LF"), // in a chunk-size line
		strings.Contains(msg, "line too long"),          // 4 KiB there, MaxLineBytes here
		strings.Contains(msg, "too much non-data"),      // extension overhead heuristic
		strings.Contains(msg, "chunk length too large"): // more than 16 digits, leading zeros
		return true
	case strings.Contains(msg, "malformed chunked encoding"):
		// The two bytes after chunk data were not CRLF. Both decoders
		// agreed on every chunk size so far (else net/http would have
		// failed earlier or decoded something else), so Parser accepted
		// them as a bare LF.
		return true
	case strings.Contains(msg, "invalid byte in chunk length"): // whitespace before ';'
		return bytes.Contains(data, []byte(" ;")) || bytes.Contains(data, []byte("\t;"))
	}
	return false
}

// TestFuzzSeedsSplitEverywhere runs the response seeds through the exhaustive
// split check, which is too slow for every fuzz input.
func TestFuzzSeedsSplitEverywhere(t *testing.T) {
	for _, s := range responseSeeds {
		for _, closeRead := range []bool{false, true} {
			checkSplitInvariance(t, []byte(s), false, closeRead)
		}
	}
}
