package hfhub

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Object is one row, or one struct value inside a row, with its fields in
// the order the file declares them (Python dicts keep that order, and
// some prompts iterate over a dict).
type Object struct {
	Keys   []string
	Fields map[string]any
}

// Get returns the field k (nil when absent) and whether it exists.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.Fields[k]
	return v, ok
}

// MarshalJSON writes the object with its keys in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.Fields[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *Object) set(k string, v any) {
	if _, dup := o.Fields[k]; !dup {
		o.Keys = append(o.Keys, k)
	}
	o.Fields[k] = v
}

// Values in rows are nil, bool, int64, float64, string, []byte (Parquet
// binary without a string annotation), []any and *Object.

// rowSource yields rows one at a time; io.EOF ends it.
type rowSource interface {
	next() (*Object, error)
	close() error
}

// openFile opens one data file by its extension.
func openFile(path string) (rowSource, error) {
	switch {
	case strings.HasSuffix(strings.ToLower(path), ".parquet"):
		return openParquet(path)
	case strings.HasSuffix(strings.ToLower(path), ".jsonl"):
		return openJSONLines(path)
	default:
		return openJSON(path)
	}
}

type parquetSource struct {
	path   string
	f      *os.File
	pf     *parquet.File
	schema *parquet.Schema
	check  pageCheck
	group  int // the next row group to read
	r      *parquet.GenericReader[any]
	row    int
	batch  []any // rows read ahead
	at     int
	err    error // what ended the last read
}

// parquetBatch is how many rows are decoded per read.
const parquetBatch = 16

func openParquet(path string) (rowSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := openParquetFile(f, info.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a readable Parquet file: %v", path, err)
	}
	check := pageCheck{r: f, levels: schemaLevels(pf.Metadata())}
	return &parquetSource{path: path, f: f, pf: pf, schema: pf.Schema(), check: check}, nil
}

// openParquetFile opens a Parquet file whose footer passed parquetFooter.
// The page index and bloom filters are not read (rows do not need them).
func openParquetFile(r io.ReaderAt, size int64) (pf *parquet.File, err error) {
	if _, _, err := parquetFooter(r, size); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			pf, err = nil, fmt.Errorf("corrupt metadata: %v", p)
		}
	}()
	return parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(64<<10))
}

// nextGroup checks the next row group's pages and starts reading it.
func (s *parquetSource) nextGroup() error {
	groups := s.pf.RowGroups()
	if s.group >= len(groups) {
		return io.EOF
	}
	g := s.group
	s.group++
	md := &s.pf.Metadata().RowGroups[g]
	for j := range md.Columns {
		if err := s.check.chunk(&md.Columns[j].MetaData, s.check.levels[j]); err != nil {
			return fmt.Errorf("row group %d, column %s: %v", g, strings.Join(md.Columns[j].MetaData.PathInSchema, "."), err)
		}
	}
	s.r = parquet.NewGenericRowGroupReader[any](groups[g])
	return nil
}

func (s *parquetSource) next() (o *Object, err error) {
	defer func() {
		// A corrupt page can make the decoder panic; it is an error of
		// this file, not of the run.
		if p := recover(); p != nil {
			o, err = nil, fmt.Errorf("%s row %d: corrupt Parquet data: %v", s.path, s.row, p)
		}
	}()
	for s.at == len(s.batch) {
		if s.err != nil {
			if !errors.Is(s.err, io.EOF) {
				return nil, fmt.Errorf("%s row %d: %v", s.path, s.row, s.err)
			}
			// This row group is done: on to the next.
			s.err, s.r = nil, nil
		}
		if s.r == nil {
			if err := s.nextGroup(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil, io.EOF
				}
				s.err = err
				return nil, fmt.Errorf("%s: %v", s.path, err)
			}
		}
		if s.batch == nil {
			s.batch = make([]any, parquetBatch)
		}
		clear(s.batch)
		s.batch = s.batch[:cap(s.batch)]
		n, err := s.r.Read(s.batch)
		s.batch, s.at, s.err = s.batch[:n], 0, err
		if n == 0 && err == nil {
			s.err = io.EOF
		}
	}
	m := s.batch[s.at]
	s.batch[s.at] = nil
	s.at++
	s.row++
	v, _ := fromParquet(m, s.schema).(*Object)
	if v == nil {
		v = &Object{Fields: map[string]any{}}
	}
	return v, nil
}

func (s *parquetSource) close() error { return s.f.Close() }

// fromParquet converts parquet-go's reconstruction of a value (maps,
// slices, scalars) to row values, ordering struct fields as node does.
func fromParquet(v any, node parquet.Node) any {
	switch v := v.(type) {
	case map[string]any:
		o := &Object{Fields: make(map[string]any, len(v))}
		var fields []parquet.Field
		if node != nil && !node.Leaf() && !isListNode(node) {
			fields = node.Fields()
		}
		for _, f := range fields {
			if x, ok := v[f.Name()]; ok {
				o.set(f.Name(), fromParquet(x, f))
			}
		}
		if len(o.Keys) < len(v) {
			var rest []string
			for k := range v {
				if _, ok := o.Fields[k]; !ok {
					rest = append(rest, k)
				}
			}
			sort.Strings(rest)
			for _, k := range rest {
				o.set(k, fromParquet(v[k], nil))
			}
		}
		// A struct that is null as a whole comes back with every field
		// nil; Python sees None.
		if node != nil && node.Optional() && allNil(o) {
			return nil
		}
		return o
	case []any:
		elem := listElement(node)
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = fromParquet(x, elem)
		}
		return out
	case int32:
		return int64(v)
	case int:
		return int64(v)
	case uint32:
		return int64(v)
	case uint64:
		return int64(v)
	case float32:
		return float64(v)
	case []byte:
		if node != nil && node.Type().LogicalType() != nil {
			if _, ok := node.Type().LogicalType().Value.(*format.StringType); ok {
				return string(v)
			}
		}
		return v
	}
	return v
}

func allNil(o *Object) bool {
	for _, k := range o.Keys {
		if o.Fields[k] != nil {
			return false
		}
	}
	return len(o.Keys) > 0
}

func isListNode(n parquet.Node) bool {
	lt := n.Type().LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.ListType)
	return ok
}

// listElement is the element node of a LIST group (list/element), nil
// when node is not one.
func listElement(node parquet.Node) parquet.Node {
	if node == nil || node.Leaf() || !isListNode(node) {
		return nil
	}
	fs := node.Fields()
	if len(fs) != 1 {
		return nil
	}
	inner := parquet.Node(fs[0])
	if !inner.Leaf() && len(inner.Fields()) == 1 {
		return inner.Fields()[0]
	}
	return inner
}

// jsonLinesSource reads one JSON object per line.
type jsonLinesSource struct {
	path string
	f    *os.File
	sc   *bufio.Reader
	line int
}

// maxLine bounds one JSON line (room for inline media).
const maxLine = 64 << 20

func openJSONLines(path string) (rowSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &jsonLinesSource{path: path, f: f, sc: bufio.NewReaderSize(f, 1<<16)}, nil
}

func (s *jsonLinesSource) next() (*Object, error) {
	for {
		line, err := readLine(s.sc)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%s line %d: %v", s.path, s.line+1, err)
		}
		s.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		v, err := DecodeJSON(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %v", s.path, s.line, err)
		}
		o, ok := v.(*Object)
		if !ok {
			return nil, fmt.Errorf("%s line %d: want one JSON object per line", s.path, s.line)
		}
		return o, nil
	}
}

func (s *jsonLinesSource) close() error { return s.f.Close() }

// readLine reads one line of at most maxLine bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line is longer than %d MiB", maxLine>>20)
		}
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return buf, nil
		default:
			return nil, err
		}
	}
}

// openJSON reads a .json file as the json builder does: a JSON list of
// objects, else JSON lines. A list is read an item at a time, each item
// at most maxLine long, as a line is.
func openJSON(path string) (rowSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		b, err := br.Peek(1)
		if err != nil {
			f.Close()
			if errors.Is(err, io.EOF) {
				return emptySource{}, nil
			}
			return nil, err
		}
		if b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t' {
			_, _ = br.ReadByte()
			continue
		}
		if b[0] != '[' {
			return &jsonLinesSource{path: path, f: f, sc: br}, nil
		}
		break
	}
	list, err := NewJSONList(br, maxLine)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: invalid JSON: %v", path, err)
	}
	return &jsonListSource{path: path, f: f, list: list}, nil
}

// jsonListSource reads the objects of a JSON list one at a time.
type jsonListSource struct {
	path string
	f    *os.File
	list *JSONList
}

func (s *jsonListSource) next() (*Object, error) {
	var v any
	more, err := s.list.Next(func(dec *json.Decoder) error {
		var err error
		v, err = decodeValue(dec, 1)
		return err
	})
	var long *ItemTooLargeError
	switch {
	case errors.As(err, &long):
		return nil, fmt.Errorf("%s: %v (put large media in files the row names by path, or split the row)", s.path, long)
	case err != nil:
		return nil, fmt.Errorf("%s: item %d (from 0): %v", s.path, s.list.Index(), err)
	case !more:
		return nil, io.EOF
	}
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("%s: item %d (from 0) is not a JSON object; want a list of objects", s.path, s.list.Index())
	}
	return o, nil
}

func (s *jsonListSource) close() error { return s.f.Close() }

// emptySource is a file with nothing but spaces.
type emptySource struct{}

func (emptySource) next() (*Object, error) { return nil, io.EOF }
func (emptySource) close() error           { return nil }

// DecodeJSON decodes one JSON value into row values, objects keeping
// their key order and integers staying int64.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: more than one value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting of a JSON value (encoding/json's own
// limit): each level is a call, and a 64 MiB line of brackets would
// otherwise outgrow the goroutine's stack.
const maxJSONDepth = 10000

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("invalid JSON: unexpected end")
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth && (t == '{' || t == '[') {
			return nil, fmt.Errorf("invalid JSON: nested deeper than %d levels", maxJSONDepth)
		}
		switch t {
		case '{':
			o := &Object{Fields: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %v", err)
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %v", t)
	case json.Number:
		if i, err := t.Int64(); err == nil && !strings.ContainsAny(t.String(), ".eE") {
			return i, nil
		}
		f, err := t.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return nil, fmt.Errorf("invalid JSON number %s", t)
		}
		return f, nil
	default:
		return t, nil
	}
}
