package datasets

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/stampede-bench/stampede/datasets/pyrand"
	"github.com/stampede-bench/stampede/internal/py"
)

// SampleBurstGPT is BurstGPTDataset: keep the rows whose Model is "GPT-4"
// and whose Response tokens are > 0, draw --num-prompts of them the
// way pandas' DataFrame.sample(n, random_state=--seed, replace=n > rows) does,
// and for the i-th drawn row build a prompt of its third column's count of
// token ids (i + j) mod vocab_size, decoded to text. PromptLen is that
// count (not re-tokenised); ExpectedOutputLen is the fourth column. Python
// neither shuffles nor oversamples this dataset.
//
// Exactness: pandas samples through numpy.random.RandomState(--seed):
// without replacement it takes permutation(rows)[:n] (legacy Fisher–Yates
// with masked rejection draws), with replacement randint(0, rows, n). Both
// are ported bit for bit (see pandasSampleRows), so the same rows are
// picked in the same order as Python for the same CSV and seed.
func SampleBurstGPT(env *Env) ([]Request, error) {
	tok := env.Tokenizer
	if tok == nil {
		return nil, fmt.Errorf("dataset burstgpt: a tokenizer is required (drop --skip-tokenizer-init)")
	}
	if env.Path == "" {
		return nil, valueError("dataset_path must be provided for loading data.")
	}
	rows, columns, err := readBurstGPT(env.Path)
	if err != nil {
		return nil, err
	}
	picked, err := pandasSampleRows(len(rows), env.NumPrompts, env.NumPrompts > len(rows), env.Seed)
	if err != nil {
		return nil, err
	}
	if len(picked) > 0 && columns < 4 {
		return nil, &py.Error{Type: "IndexError", Msg: fmt.Sprintf("list index out of range (burstgpt reads the "+
			"request tokens from the 3rd column and the response tokens from the 4th; %s has %d columns)", env.Path, columns)}
	}
	vocab := tok.VocabSize()
	if vocab <= 0 {
		return nil, fmt.Errorf("dataset burstgpt: the tokenizer reports vocab_size %d", vocab)
	}
	reqs := make([]Request, len(picked))
	var ids []int32
	for i, row := range picked {
		r := rows[row]
		inputLen, err := r.int(r.requestTokens)
		if err != nil {
			return nil, err
		}
		outputLen, err := r.int(r.responseTokens)
		if err != nil {
			return nil, err
		}
		ids = ids[:0]
		for j := range inputLen {
			ids = append(ids, int32((i+j)%vocab))
		}
		reqs[i] = Request{
			Prompt:            tok.Decode(ids, false),
			PromptLen:         inputLen,
			ExpectedOutputLen: outputLen,
			RequestID:         env.RequestIDPrefix + strconv.Itoa(i),
		}
	}
	return reqs, nil
}

// burstGPTRow is a kept row's third and fourth cells, as text, and where
// they came from.
type burstGPTRow struct {
	path                          string
	line                          int
	requestTokens, responseTokens string
}

// int is int(cell) after pandas' number inference: a number truncates
// toward zero; an empty cell is NaN, which int() refuses.
func (r burstGPTRow) int(cell string) (int, error) {
	s := strings.TrimSpace(cell)
	if s == "" {
		return 0, valueError("cannot convert float NaN to integer")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("dataset burstgpt %s line %d: token count %q is not a number", r.path, r.line, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, valueError(fmt.Sprintf("cannot convert float %s to integer", strings.ToLower(s)))
	}
	return int(v), nil
}

// csvError says what is wrong in a CSV file, in CSV's terms rather than
// encoding/csv's.
func csvError(path string, err error) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return fmt.Errorf("dataset burstgpt %s: %w", path, err)
	}
	what := pe.Err.Error()
	switch {
	case errors.Is(pe.Err, csv.ErrBareQuote):
		what = `a '"' inside a field that does not start with one; quote the whole field and write the inner quote twice ("a ""b"" c")`
	case errors.Is(pe.Err, csv.ErrQuote):
		what = `a quoted field is not closed, or text follows its closing '"'; a quoted field ends with '"' before the next comma or line end`
	}
	return fmt.Errorf("dataset burstgpt %s line %d, column %d: %s", path, pe.Line, pe.Column, what)
}

// readBurstGPT is pd.read_csv plus the Model == "GPT-4" and Response
// tokens > 0 filters; it also returns the number of columns.
func readBurstGPT(path string) ([]burstGPTRow, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("dataset burstgpt: %w", err)
	}
	defer f.Close()
	rd := csv.NewReader(newLineLimiter(f, MaxLineBytes))
	rd.FieldsPerRecord = -1
	header, err := rd.Read()
	if err == io.EOF {
		return nil, 0, &py.Error{Type: "EmptyDataError", Msg: "No columns to parse from file"}
	}
	if err != nil {
		return nil, 0, csvError(path, err)
	}
	col := func(name string) (int, error) {
		for i, h := range header {
			if h == name {
				return i, nil
			}
		}
		return 0, &py.Error{Type: "KeyError", Msg: "'" + name + "'"}
	}
	modelCol, err := col("Model")
	if err != nil {
		return nil, 0, err
	}
	respCol, err := col("Response tokens")
	if err != nil {
		return nil, 0, err
	}
	var rows []burstGPTRow
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, csvError(path, err)
		}
		cell := func(i int) string {
			if i < len(rec) {
				return rec[i]
			}
			return ""
		}
		if cell(modelCol) != "GPT-4" {
			continue
		}
		resp := strings.TrimSpace(cell(respCol))
		if resp == "" {
			continue // NaN > 0 is false
		}
		v, err := strconv.ParseFloat(resp, 64)
		if err != nil {
			return nil, 0, &py.Error{Type: "TypeError", Msg: fmt.Sprintf("'>' not supported between instances of 'str' and 'int' (dataset burstgpt %s line %d: Response tokens %q)", path, line, resp)}
		}
		if !(v > 0) {
			continue
		}
		rows = append(rows, burstGPTRow{path: path, line: line, requestTokens: cell(2), responseTokens: cell(3)})
	}
	return rows, len(header), nil
}

// pandasSampleRows is the row positions DataFrame.sample(n=n,
// random_state=seed, replace=replace) picks from a frame of rows rows, in
// order: numpy.random.RandomState(seed).choice(rows, size=n,
// replace=replace), i.e. randint(0, rows, n) with replacement and
// permutation(rows)[:n] without.
func pandasSampleRows(rows, n int, replace bool, seed int64) ([]int, error) {
	if n < 0 {
		return nil, valueError("A negative number of rows requested. Please provide `n` >= 0.")
	}
	if seed < 0 || seed > math.MaxUint32 {
		return nil, valueError("Seed must be between 0 and 2**32 - 1")
	}
	rs := pyrand.NewRandomState(uint32(seed))
	if replace {
		if rows == 0 {
			if n == 0 {
				return []int{}, nil
			}
			return nil, valueError("a cannot be empty unless no samples are taken")
		}
		vals, err := rs.RandInt(0, int64(rows), n)
		if err != nil {
			return nil, err
		}
		out := make([]int, n)
		for i, v := range vals {
			out[i] = int(v)
		}
		return out, nil
	}
	if n > rows {
		return nil, valueError("Cannot take a larger sample than population when 'replace=False'")
	}
	perm, err := legacyPermutation(rs, rows)
	if err != nil {
		return nil, err
	}
	return perm[:n], nil
}

// legacyPermutation is RandomState.permutation(n): arange(n) shuffled from
// the back, position i swapped with random_interval(i), a masked
// rejection draw in [0, i] (the same draws as randint(0, i+1)).
func legacyPermutation(rs *pyrand.RandomState, n int) ([]int, error) {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		v, err := rs.RandInt(0, int64(i)+1, 1)
		if err != nil {
			return nil, errors.New("permutation: " + err.Error())
		}
		j := int(v[0])
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm, nil
}

var burstGPTDataset = &Dataset{Name: "burstgpt", Stream: sampled(SampleBurstGPT)}
