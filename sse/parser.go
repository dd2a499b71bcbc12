package sse

import (
	"bytes"
	"errors"
	"fmt"
)

// MaxEventBytes bounds one event block: the bytes of all its lines, line
// endings excluded. OpenAI chunks are a few hundred bytes, but a chunk that
// carries top-k logprobs for a long prompt (echo) or a whole non-incremental
// tool call can reach megabytes; 16 MiB leaves ample room for those while
// still stopping a server that never ends a line from growing the buffer
// without bound.
const MaxEventBytes = 16 << 20

// retainBytes is the buffer capacity Reset keeps for the next body. A Parser
// lives as long as its keep-alive connection, so one oversized event must not
// pin megabytes on each of 10,000 connections.
const retainBytes = 64 << 10

// ErrEventTooLarge is returned (wrapped) by Feed when an event block exceeds
// MaxEventBytes.
var ErrEventTooLarge = errors.New("sse: event exceeds MaxEventBytes")

// utf8BOM is stripped from the start of a body, as the SSE specification
// requires.
var utf8BOM = []byte("\xEF\xBB\xBF")

// Event is one parsed SSE event. Slices are valid only during the handler call.
type Event struct {
	Name  []byte // "event:" field, nil if absent
	Data  []byte // the data lines joined with "\n" (no trailing newline)
	ID    []byte // "id:" field of this event, nil if absent
	Retry int64  // "retry:" field in milliseconds, -1 if absent or not all digits

	// Unterminated reports an event delivered by Flush: the body ended
	// before the blank line that completes it. Python's assembler emits such
	// a trailing event only if its payload is [DONE] or valid JSON and drops
	// it silently otherwise, so a caller mirroring Python ignores a decoding
	// error on an unterminated event.
	Unterminated bool
}

// EventHandler receives the events a Parser completes.
type EventHandler interface {
	// OnEvent is called for each complete event (comment-only blocks are not events). Returning
	// a non-nil error stops Feed, which returns it.
	OnEvent(ev *Event) error
}

// Parser is an incremental SSE parser over body bytes split anywhere. Zero value usable;
// it reuses its internal buffers, so after warm-up it does not allocate.
//
// Line endings may be LF, CRLF or a lone CR, in any mix. An event is
// dispatched at the blank line that ends its block, and only if the block had
// a data field, as the WHATWG specification says; blocks of comments or other
// fields alone are not events. A Parser is not safe for concurrent use, and a
// handler must not call back into the Parser that is calling it. After Feed or
// Flush returns an error the Parser must be Reset before it is fed again.
type Parser struct {
	line []byte // a line begun in an earlier Feed and not yet ended
	data []byte // data lines of the current block, joined with '\n'
	name []byte // event field of the current block
	id   []byte // id field of the current block

	// view, while borrowed, is the current block's one data line as it
	// sits in the bytes Feed was given, not yet copied into data: an
	// event whose block ends in the same Feed (nearly all do) is handed
	// to the handler from the caller's bytes, and data is never written.
	// Feed copies a block it leaves pending into data before it returns.
	view     []byte
	borrowed bool

	retry    int64
	size     int // line bytes of the current block, for MaxEventBytes
	comments int

	hasData, hasName, hasID, hasRetry bool

	// afterCR: the previous read ended with a CR that ended a line, so a
	// LF at the start of the next read is the rest of that CRLF.
	afterCR bool
	// inBody: at least one line of this body has been seen, so a BOM is no
	// longer possible.
	inBody bool

	ev Event // handed to the handler; reused so no Event escapes per call
}

// Reset prepares the Parser for a new body, keeping its buffers unless they
// grew beyond a modest size, and zeroes the comment count.
func (p *Parser) Reset() {
	p.endBody()
	p.comments = 0
}

// endBody clears all per-body state and lets go of buffers that one
// oversized event grew.
func (p *Parser) endBody() {
	p.line = retain(p.line)
	p.data = retain(p.data)
	p.name = retain(p.name)
	p.id = retain(p.id)
	p.resetBlock()
	p.afterCR = false
	p.inBody = false
	p.ev = Event{}
}

func retain(b []byte) []byte {
	if cap(b) > retainBytes {
		return nil
	}
	return b[:0]
}

// Comments counts comment lines seen (pings), for diagnostics.
func (p *Parser) Comments() int { return p.comments }

// Feed parses the next bytes of the body, calling h for every event they
// complete. A line or event left incomplete at the end of b is kept (copied)
// until later bytes or Flush complete it. It returns the first error a
// handler returns, or an error wrapping ErrEventTooLarge.
func (p *Parser) Feed(b []byte, h EventHandler) error {
	err := p.feed(b, h)
	if p.borrowed {
		p.own()
	}
	return err
}

// own copies a borrowed data line into the Parser's buffer.
func (p *Parser) own() {
	p.data = append(p.data[:0], p.view...)
	p.view, p.borrowed = nil, false
}

func (p *Parser) feed(b []byte, h EventHandler) error {
	if p.afterCR && len(b) > 0 {
		p.afterCR = false
		if b[0] == '\n' {
			b = b[1:]
		}
	}
	// lf is the index of the next LF in b, or len(b) if there is none; it is
	// searched for again only once passed, so a body of lone-CR lines costs
	// one scan rather than one scan per line.
	lf := -1
	for len(b) > 0 {
		if lf < 0 {
			if lf = bytes.IndexByte(b, '\n'); lf < 0 {
				lf = len(b)
			}
		}
		end := lf
		if cr := bytes.IndexByte(b[:lf], '\r'); cr >= 0 {
			end = cr
		}
		if end == len(b) {
			if p.size+len(p.line)+len(b) > MaxEventBytes {
				return p.tooLarge(len(p.line) + len(b))
			}
			p.line = append(p.line, b...)
			return nil
		}
		line, inB := b[:end], true
		if len(p.line) > 0 {
			if p.size+len(p.line)+end > MaxEventBytes {
				return p.tooLarge(len(p.line) + end)
			}
			p.line = append(p.line, line...)
			line, inB = p.line, false
		}
		next := end + 1
		if b[end] == '\r' {
			if next == len(b) {
				p.afterCR = true
			} else if b[next] == '\n' {
				next++
			}
		}
		b = b[next:]
		if lf -= next; lf < 0 {
			lf = -1
		}
		err := p.processLine(line, inB, h)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// Flush ends the body: a last event that ended without a blank line is delivered (as
// Python's assembler does for a trailing "data: " payload that is [DONE] or JSON).
// The event carries Unterminated. Flush then readies the Parser for the next
// body on the same connection; the comment count is kept until Reset.
func (p *Parser) Flush(h EventHandler) error {
	var err error
	if len(p.line) > 0 {
		err = p.processLine(p.line, false, h)
		p.line = p.line[:0]
	}
	if err == nil && p.hasData {
		err = p.dispatch(h, true)
	}
	p.endBody()
	return err
}

// processLine interprets one complete line (without its ending) under the
// WHATWG rules: blank dispatches, ':' starts a comment, otherwise
// "field:value" with one leading space of the value dropped, or a bare field
// name with an empty value. inB says line lies in the bytes being fed, so
// that a first data line may be borrowed rather than copied.
func (p *Parser) processLine(line []byte, inB bool, h EventHandler) error {
	if !p.inBody {
		p.inBody = true
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if len(line) == 0 {
		if !p.hasData {
			p.resetBlock()
			return nil
		}
		return p.dispatch(h, false)
	}
	if p.size+len(line) > MaxEventBytes {
		return p.tooLarge(len(line))
	}
	p.size += len(line)
	if line[0] == ':' {
		p.comments++
		return nil
	}
	field, value := line, line[len(line):]
	if colon := bytes.IndexByte(line, ':'); colon >= 0 {
		field, value = line[:colon], line[colon+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		switch {
		case !p.hasData && inB:
			p.view, p.borrowed = value, true
		case p.borrowed:
			p.own()
			fallthrough
		case p.hasData:
			p.data = append(p.data, '\n')
			fallthrough
		default:
			p.data = append(p.data, value...)
		}
		p.hasData = true
	case "event":
		p.name = append(p.name[:0], value...)
		p.hasName = true
	case "id":
		// The specification ignores an id containing NUL.
		if bytes.IndexByte(value, 0) < 0 {
			p.id = append(p.id[:0], value...)
			p.hasID = true
		}
	case "retry":
		if ms, ok := parseRetry(value); ok {
			p.retry = ms
			p.hasRetry = true
		}
	}
	return nil
}

// dispatch hands the current block to h as an event and clears the block.
// The Event's slices alias the Parser's buffers, which are not written again
// before the handler returns.
func (p *Parser) dispatch(h EventHandler, unterminated bool) error {
	ev := &p.ev
	data := p.data
	if p.borrowed {
		data = p.view
	}
	*ev = Event{Data: nonNil(data), Retry: -1, Unterminated: unterminated}
	if p.hasName {
		ev.Name = nonNil(p.name)
	}
	if p.hasID {
		ev.ID = nonNil(p.id)
	}
	if p.hasRetry {
		ev.Retry = p.retry
	}
	p.resetBlock()
	return h.OnEvent(ev)
}

// nonNil makes a present-but-empty field distinguishable from an absent one.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (p *Parser) resetBlock() {
	p.data = p.data[:0]
	p.view, p.borrowed = nil, false
	p.name = p.name[:0]
	p.id = p.id[:0]
	p.size = 0
	p.hasData, p.hasName, p.hasID, p.hasRetry = false, false, false, false
}

func (p *Parser) tooLarge(pending int) error {
	return fmt.Errorf("%w: block reached %d bytes (limit %d)", ErrEventTooLarge, p.size+pending, MaxEventBytes)
}

// parseRetry accepts what the specification accepts: one or more ASCII
// digits. Values beyond int64 are rejected rather than wrapped.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Buffered returns how many body bytes the Parser holds for an event it
// has not dispatched yet: the unfinished line and the current block's
// fields. A caller bounding memory over many streams sums these.
func (p *Parser) Buffered() int {
	return len(p.line) + len(p.data) + len(p.name) + len(p.id)
}
