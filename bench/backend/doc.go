// Package backend is the --backend table (spec §b): one row per backend
// with its request function (endpoint suffix, body encoder, whether it
// sets Content-Type), its stream format and its capabilities (chat-like,
// multimodal, pooling, multipart audio), and the request bodies and
// headers byte for byte as Python's client posts them: JSON, multipart
// form data, LoRA adapters and the Responses API. Code outside the table
// reads a backend's columns through Of, never its name.
package backend
