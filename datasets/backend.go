package datasets

// Backend is what a dataset may know of --backend: its name, for the
// messages that quote it, and the columns of its row in the backend table
// (package bench/backend) that change what a dataset builds or accepts.
// Datasets read these columns, never the name, so a new backend gets the
// datasets its capabilities allow by its table row alone.
type Backend struct {
	// Name is the --backend value.
	Name string
	// ChatLike backends post a chat API (Chat Completions, or the
	// Anthropic Messages API), whose server applies the chat template
	// itself (sonnet leaves it out; BFCL needs one, for its tool schemas).
	ChatLike bool
	// Multimodal backends take requests with media: Python's
	// multimodal_backends (chat media parts, an audio clip).
	Multimodal bool
	// EmbedsMedia embeddings backends embed media items too (the
	// embeddings-chat, clip and vlm2vec families).
	EmbedsMedia bool
}
