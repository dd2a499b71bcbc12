// Package datasets builds the benchmark's requests from every
// --dataset-name source (spec §g). Tokenizers live in datasets/tokenizer.
//
// Each dataset is one file that declares a *Dataset (its --dataset-name,
// what the run must do around it, and Sample) and the struct of its
// option group; Registry lists the datasets and Flags the option groups,
// which the command line fills. Sample is the file's Sample<Name>(env),
// which reads what every dataset shares from the *Env (tokenizer, chat
// template, Python's global generators, --seed, --num-prompts, the id
// prefix, the common dataset flags, the logger) and its own options from
// env.Flags, and reproduces Python's <Name>Dataset.sample for the same
// seed and tokenizer: the same prompts in the same order, the same lengths
// and ids. The random draws go through package pyrand, which ports
// CPython's random and numpy's generators bit for bit; the process-wide
// generators Python shares between datasets and the scheduler are passed
// explicitly as PythonGlobals.
//
// Errors whose text Python defines are *py.Error values carrying the
// exception class and the message word for word; the rest name the flag or
// field and what would be accepted.
//
// What stampede cannot reproduce, and does instead:
//   - Chat templates are Jinja programs inside the model's tokenizer
//     files. Datasets that apply one (custom, sonnet) take a ChatTemplate
//     function; without one, custom asks for --skip-chat-template and
//     sonnet fails, rather than measure prompts Python would have framed.
//   - ServerTokenizer stands in for a local tokenizer through the server's
//     /tokenize and /detokenize; it does not know the vocabulary size, which
//     the caller sets or Probe estimates (see its doc).
package datasets
