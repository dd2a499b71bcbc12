package hfhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONList reads a file that holds one JSON list (ShareGPT, a hub
// dataset's .json) an item at a time through a json.Decoder, so the file
// is never held whole: what is kept is what the caller keeps of each
// item. One item may be at most its limit long (counted from the comma
// before it, with the spaces after that comma): past it Next fails with
// an *ItemTooLargeError naming the item, having held about twice the
// limit, instead of decoding a runaway item until memory runs out.
type JSONList struct {
	dec   *json.Decoder
	in    *itemLimiter
	index int // the next item's, from 0
	done  bool
}

// NotAListError is a JSON file whose value is not a list. Kind names the
// value as encoding/json does: "object", "string", "number", "bool",
// "null".
type NotAListError struct{ Kind string }

func (e *NotAListError) Error() string { return "found a JSON " + e.Kind + ", not a list" }

// ItemTooLargeError is an item of a JSON list longer than the limit.
type ItemTooLargeError struct {
	Index int   // from 0
	Limit int64 // bytes
}

func (e *ItemTooLargeError) Error() string {
	return fmt.Sprintf("item %d (from 0) is longer than %d MiB, the most stampede reads as one row", e.Index, e.Limit>>20)
}

// NewJSONList reads r's opening '['; a value of another kind is a
// *NotAListError, bytes that are not JSON encoding/json's error. Each item
// may be at most limit bytes of JSON.
func NewJSONList(r io.Reader, limit int64) (*JSONList, error) {
	in := &itemLimiter{r: r, limit: limit}
	dec := json.NewDecoder(in)
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	kind := ""
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return &JSONList{dec: dec, in: in}, nil
		}
		kind = "object"
	case string:
		kind = "string"
	case json.Number:
		kind = "number"
	case bool:
		kind = "bool"
	case nil:
		kind = "null"
	}
	return nil, &NotAListError{Kind: kind}
}

// Index is the number of the item Next read last (or failed on), from 0.
func (l *JSONList) Index() int { return l.index - 1 }

// Next hands the decoder to decode, which must read exactly the next
// item (dec.Decode, or its tokens); false once the list has closed and
// nothing but spaces follows it.
func (l *JSONList) Next(decode func(dec *json.Decoder) error) (bool, error) {
	if l.done {
		return false, nil
	}
	if !l.dec.More() {
		if _, err := l.dec.Token(); err != nil {
			return false, l.failure(err)
		}
		l.done = true
		if _, err := l.dec.Token(); !errors.Is(err, io.EOF) {
			return false, errors.New("more JSON after the list's closing ']'")
		}
		return false, nil
	}
	l.in.itemStart, l.in.inItem = l.dec.InputOffset(), true
	l.index++
	err := decode(l.dec)
	l.in.inItem = false
	if err != nil {
		return false, l.failure(err)
	}
	// An item the decoder had read ahead whole never reached the reader's
	// check.
	if l.dec.InputOffset()-l.in.itemStart > l.in.limit {
		return false, &ItemTooLargeError{Index: l.index - 1, Limit: l.in.limit}
	}
	return true, nil
}

// failure is err, or an *ItemTooLargeError when the limiter stopped the
// read (a decoder's error text does not keep the type).
func (l *JSONList) failure(err error) error {
	if l.in.tooLarge {
		return &ItemTooLargeError{Index: l.index - 1, Limit: l.in.limit}
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// itemLimiter passes r's bytes to the decoder and fails a read once the
// item being decoded is longer than limit. The decoder asks for bytes
// only while the value it is reading is incomplete, so when it asks with
// read − itemStart bytes past the item's start (its comma) already
// delivered, the item is at least that long: the check never fails an
// item within the limit, and it stops one past it after at most one
// read, before the decoder's buffer has grown to twice the limit.
// Between items the decoder drops the spaces it skips, so no bound is
// needed there.
type itemLimiter struct {
	r         io.Reader
	limit     int64
	read      int64 // bytes delivered so far
	itemStart int64 // the decoder's offset where the current item began
	inItem    bool  // an item is being decoded
	tooLarge  bool
}

func (l *itemLimiter) Read(p []byte) (int, error) {
	if l.inItem && l.read-l.itemStart > l.limit {
		l.tooLarge = true
		return 0, errors.New("item too large")
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
