package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/datasets/chattemplate"
	"github.com/stampede-bench/stampede/datasets/tokenizer"
	"github.com/stampede-bench/stampede/internal/py"
)

// --tokenizer-mode, as vLLM's tokenizer registry reads it: "auto" is
// Mistral's tokenizer for a Mistral checkpoint (consolidated*.safetensors
// beside tekken.json or tokenizer.model.v*) and Hugging Face's otherwise;
// "slow" and "hf" are Hugging Face's (stampede's one implementation gives
// the fast tokenizer's ids); "mistral" is tekken.json. The other modes vLLM
// registers are refused before the run (by cli.Parse), and a mode vLLM
// does not know fails as vLLM's get_tokenizer does.

// Tokenizer is the run's tokenizer and what comes with it.
type Tokenizer struct {
	datasets.Tokenizer
	// ID is --tokenizer, else the model's id: Hugging Face's name_or_path.
	ID string
	// ChatTemplate renders a prompt as the tokenizer's chat template does;
	// nil when the tokenizer has none.
	ChatTemplate datasets.ChatTemplate
	// ChatRender renders whole conversations (MLPerf, BFCL) with the chat
	// template; nil when the tokenizer has none.
	ChatRender func(messages, tools []byte) (string, error)
	// SHA256 is the hex SHA-256 of the tokenizer's file, for the run's
	// fingerprint; "" for the server's /tokenize.
	SHA256 string
}

// LoadTokenizer is spec §a step 10: the pure-Go tokenizer of --tokenizer
// (else modelID) from a local path, the Hugging Face cache or the hub;
// when none can be had, the server's /tokenize and /detokenize stand in,
// with a warning on stderr. Offline (SampleOnly) nothing stands in. When
// no tokenizer can be had, the OSError's first line says what to pass,
// and the lines after it why each way failed.
func (s *Server) LoadTokenizer(ctx context.Context, modelID string, stderr io.Writer) (*Tokenizer, error) {
	name := s.cfg.Tokenizer
	if name == "" {
		name = modelID
	}
	tok, path, err := loadTokenizerMode(s.cfg.TokenizerMode, name)
	var invalid *py.Error
	var usage *py.UsageError
	if errors.As(err, &invalid) || errors.As(err, &usage) {
		return nil, err
	}
	if err == nil {
		t := &Tokenizer{Tokenizer: tok, ID: name, SHA256: tokenizerSHA256(tok, path)}
		// The chat template lives beside the tokenizer (tokenizer_config.json
		// or chat_template.jinja); a tokenizer without one leaves the
		// datasets that need it to say so.
		if tmpl, terr := chattemplate.Load(path); terr == nil {
			t.ChatTemplate = tmpl.UserTurn
			t.ChatRender = func(messages, tools []byte) (string, error) {
				return tmpl.RenderJSON(messages, tools, true, nil)
			}
		}
		return t, nil
	}
	loading := fmt.Sprintf("loading %s: %v", name, err)
	switch {
	case s.cfg.Tokenizer != "":
		// A tokenizer the user named and that cannot be had is an error,
		// as in Python: the server's /tokenize would count other lengths
		// in silence.
		return nil, noTokenizerError("--tokenizer "+name+" could not be loaded: give a tokenizer.json file, a directory holding one, "+
			"or a Hugging Face id in the local cache (without --tokenizer, tokens are counted with the server's /tokenize)", loading)
	case s.offline:
		return nil, noTokenizerError("no tokenizer for "+name+": "+tokenizerHint,
			s.namesNoServer()+" to count tokens with its /tokenize", loading)
	}
	st := datasets.NewServerTokenizer(s.cfg.BaseURL, modelID, s.control)
	if perr := st.Probe(ctx); perr != nil {
		return nil, noTokenizerError("no tokenizer for "+name+": "+tokenizerHint,
			loading, "the server's /tokenize, which stands in without one: "+perr.Error())
	}
	fmt.Fprintf(stderr, "WARNING: tokenizer %s could not be loaded (%v); counting tokens with the server's /tokenize and /detokenize instead.\n", name, err)
	fmt.Fprintf(stderr, "Counting tokens with the server's /tokenize and /detokenize (%s dialect).\n", st.Dialect())
	return &Tokenizer{Tokenizer: st, ID: name}, nil
}

// builtTokenizerModes are the --tokenizer-mode values stampede loads.
var builtTokenizerModes = []string{"auto", "hf", "slow", "mistral"}

// loadTokenizerMode resolves and loads the tokenizer name (a path or hub
// id) in the given mode. path is where a Hugging Face tokenizer came from
// (its chat template lives beside it), "" for Mistral's; a *py.Error is vLLM's own failure for
// the mode and must not be papered over by the server's /tokenize.
func loadTokenizerMode(mode, name string) (tok *tokenizer.Tokenizer, path string, err error) {
	if mode == "auto" {
		if info, serr := os.Stat(name); serr == nil && info.IsDir() && tokenizer.IsMistralDir(name) {
			mode = "mistral"
		}
	}
	switch mode {
	case "auto", "hf", "slow":
		if path, err = tokenizer.Resolve(name, tokenizer.ResolveOptions{}); err != nil {
			return nil, "", err
		}
		tok, err = tokenizer.Load(path)
		return tok, path, err
	case "mistral":
		if path, err = tokenizer.ResolveMistral(name, tokenizer.ResolveOptions{}); err != nil {
			return nil, "", fmt.Errorf("--tokenizer-mode mistral: %w", err)
		}
		if tok, err = tokenizer.LoadMistral(path); err != nil {
			return nil, "", fmt.Errorf("--tokenizer-mode mistral: %w", err)
		}
		// No path: a Mistral tokenizer renders chats with mistral_common,
		// never with a jinja template that may sit beside it.
		return tok, "", nil
	}
	if slices.Contains(plan.RegisteredTokenizerModes, mode) {
		// checkSupported refused it already; reached only by callers
		// that skip it.
		return nil, "", py.UsageErrorf("--tokenizer-mode %s is not supported yet", mode)
	}
	return nil, "", &py.Error{Type: "ValueError",
		Msg: fmt.Sprintf("No tokenizer registered for tokenizer_mode=%s.", py.StrRepr(mode))}
}
