package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

// maxTokenizeLine bounds one input line of `stampede tokenize` (a long
// prompt as JSON).
const maxTokenizeLine = 64 << 20

const tokenizeUsage = `usage: stampede tokenize --tokenizer PATH [--add-special-tokens]
       stampede tokenize --tokenizer PATH --decode [--skip-special-tokens]

Encodes JSON lines from stdin, each a string or an object with "text", and
writes {"ids": [...], "count": N} per line. With --decode, reads
{"ids": [...]} lines and writes {"text": "..."}. PATH is a tokenizer.json,
a .tiktoken file, a directory holding one, or a Hugging Face model id.
`

// runTokenize is the `stampede tokenize` subcommand. It returns the exit
// code: 0 on success, 1 on a bad input line or tokenizer, 2 on bad flags.
func runTokenize(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stampede tokenize", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("tokenizer", "", "tokenizer file, directory or model id")
	addSpecial := fs.Bool("add-special-tokens", false, "add the model's special tokens (BOS, CLS/SEP)")
	decode := fs.Bool("decode", false, "decode {\"ids\": [...]} lines instead of encoding")
	skipSpecial := fs.Bool("skip-special-tokens", false, "leave special tokens out of decoded text")
	usageError := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "stampede tokenize: "+format+"\n\n%s", append(args, tokenizeUsage)...)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, tokenizeUsage)
			return 0
		}
		return usageError("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *path == "":
		return usageError("--tokenizer is required (a tokenizer.json, .tiktoken file, directory or model id)")
	case *decode && *addSpecial:
		return usageError("--add-special-tokens applies to encoding, not --decode")
	case !*decode && *skipSpecial:
		return usageError("--skip-special-tokens applies to --decode only")
	}

	tok, err := tokenizer.FromPretrained(*path, tokenizer.ResolveOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "stampede tokenize: %v\n", err)
		return 1
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)

	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), maxTokenizeLine)
	var ids []int32
	for line := 1; in.Scan(); line++ {
		text := bytes.TrimSpace(in.Bytes())
		if len(text) == 0 {
			continue
		}
		var result any
		if *decode {
			var req struct {
				IDs *[]int32 `json:"ids"`
			}
			if err := json.Unmarshal(text, &req); err != nil || req.IDs == nil {
				fmt.Fprintf(stderr, "stampede tokenize: stdin line %d: want {\"ids\": [int, ...]}: %v\n", line, describe(err))
				return 1
			}
			result = struct {
				Text string `json:"text"`
			}{tok.Decode(*req.IDs, *skipSpecial)}
		} else {
			s, err := promptText(text)
			if err != nil {
				fmt.Fprintf(stderr, "stampede tokenize: stdin line %d: %v\n", line, err)
				return 1
			}
			ids = tok.Encode(ids[:0], s, *addSpecial)
			if err := tok.Err(); err != nil {
				fmt.Fprintf(stderr, "stampede tokenize: stdin line %d: %v\n", line, err)
				return 1
			}
			result = struct {
				IDs   []int32 `json:"ids"`
				Count int     `json:"count"`
			}{ids, len(ids)}
		}
		if err := enc.Encode(result); err != nil {
			fmt.Fprintf(stderr, "stampede tokenize: %v\n", err)
			return 1
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(stderr, "stampede tokenize: reading stdin: %v\n", err)
		return 1
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "stampede tokenize: %v\n", err)
		return 1
	}
	return 0
}

// promptText reads an encode line: a JSON string or {"text": "..."}.
func promptText(line []byte) (string, error) {
	if line[0] == '"' {
		var s string
		if err := json.Unmarshal(line, &s); err != nil {
			return "", fmt.Errorf("want a JSON string or {\"text\": ...}: %v", err)
		}
		return s, nil
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(line, &obj); err != nil || obj.Text == nil {
		return "", fmt.Errorf("want a JSON string or {\"text\": ...}: %v", describe(err))
	}
	return *obj.Text, nil
}

func describe(err error) string {
	if err == nil {
		return "field missing"
	}
	return err.Error()
}
