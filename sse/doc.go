// Package sse parses Server-Sent Events incrementally and decodes the OpenAI
// streaming chunks that vLLM-compatible servers send inside them.
//
// Parser turns body bytes (as httpwire hands them over, split anywhere) into
// events; the decoders (fastjson, one reusable parser per caller) say whether
// an event is a token event under the rules of `vllm bench serve` and return
// the text as bytes without allocating. The encoders serve the mock server.
package sse
