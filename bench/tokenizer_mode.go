package bench

import (
	"fmt"
	"os"
	"slices"

	"github.com/stampede-bench/stampede/bench/cli"
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

// builtTokenizerModes are the --tokenizer-mode values stampede loads.
var builtTokenizerModes = []string{"auto", "hf", "slow", "mistral"}

// loadTokenizerMode resolves and loads the tokenizer name (a path or hub
// id) in the given mode. path is where a Hugging Face tokenizer came from
// (its chat template lives beside it), "" for Mistral's; a *ValidationError is vLLM's own failure for
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
	if slices.Contains(cli.RegisteredTokenizerModes, mode) {
		// checkSupported refused it already; reached only by callers
		// that skip it.
		return nil, "", cli.UsageErrorf("--tokenizer-mode %s is not supported yet", mode)
	}
	return nil, "", &cli.ValidationError{Type: "ValueError",
		Msg: fmt.Sprintf("No tokenizer registered for tokenizer_mode=%s.", py.StrRepr(mode))}
}
