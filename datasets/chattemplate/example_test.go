package chattemplate_test

import (
	"fmt"

	"github.com/stampede-bench/stampede/datasets"
	"github.com/stampede-bench/stampede/datasets/chattemplate"
)

// UserTurn is what the datasets that template their prompts take.
var _ datasets.ChatTemplate = (*chattemplate.Template)(nil).UserTurn

func Example() {
	tmpl, err := chattemplate.Load("testdata/models/qwen3")
	if err != nil {
		panic(err)
	}
	prompt, err := tmpl.UserTurn("Why is the sky blue?", map[string]any{"enable_thinking": false})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", prompt)
	// Output: "<|im_start|>user\nWhy is the sky blue?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
}
