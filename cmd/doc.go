// Package cmd holds stampede's commands: cmd/stampede (the `vllm bench serve`
// drop-in), cmd/mockllm (a vLLM-compatible mock server) and cmd/fidelity (the
// token-timestamp fidelity benchmark). Its test checks the module's layout:
// the arrows between packages, their doc comments and the layout table in docs/architecture.md.
package cmd
