package cli

import "github.com/stampede-bench/stampede/bench/plan"

// backendNames are the --backend choices, in table order.
func backendNames(backends []plan.Backend) []string {
	names := make([]string, len(backends))
	for i := range backends {
		names[i] = backends[i].Name
	}
	return names
}

// findBackend returns the row of --backend name, or nil.
func findBackend(backends []plan.Backend, name string) *plan.Backend {
	for i := range backends {
		if backends[i].Name == name {
			return &backends[i]
		}
	}
	return nil
}
