// Package cmd holds stampede's commands: cmd/stampede (the `vllm bench serve`
// drop-in) and cmd/mockllm (a vLLM-compatible mock server).
package cmd
