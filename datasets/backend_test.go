package datasets

// The rows of the backends these tests name, as the backend table
// (bench/backend) gives them to the datasets.
var (
	chatBackend   = Backend{Name: "openai-chat", ChatLike: true, Multimodal: true}
	audioBackend  = Backend{Name: "openai-audio", Multimodal: true}
	vllmBackend   = Backend{Name: "vllm"}
	openAIBackend = Backend{Name: "openai"}
)
