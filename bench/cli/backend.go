package cli

// Backend is what the command line knows of one --backend: its name, for
// the choices, and the facts main_async's checks read. The rows come from
// bench's backend table, in its order, so that adding a backend stays one
// row there.
type Backend struct {
	Name string
	// OpenAICompatible backends accept sampling parameters and ignore_eos
	// (Python's OPENAI_COMPATIBLE_BACKENDS).
	OpenAICompatible bool
	// Pooling backends are measured as pooling tasks (Python's
	// POOLING_BACKENDS).
	Pooling bool
	// Completions backends post to the completions API, the one that
	// takes pre-tokenized prompts (timed_trace).
	Completions bool
}

// backendNames are the --backend choices, in table order.
func backendNames(backends []Backend) []string {
	names := make([]string, len(backends))
	for i := range backends {
		names[i] = backends[i].Name
	}
	return names
}

// findBackend returns the row of --backend name, or nil.
func findBackend(backends []Backend, name string) *Backend {
	for i := range backends {
		if backends[i].Name == name {
			return &backends[i]
		}
	}
	return nil
}
