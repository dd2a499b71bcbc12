package tokenizer_test

import (
	"fmt"
	"log"

	"github.com/stampede-bench/stampede/datasets/tokenizer"
)

func Example() {
	// A local file or directory, or a hub model id such as
	// "meta-llama/Meta-Llama-3-8B-Instruct" (cache first, then download).
	tok, err := tokenizer.FromPretrained("testdata/tiny", tokenizer.ResolveOptions{Offline: true})
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode(nil, "The tokenizer splits text.", true)
	fmt.Println(len(ids), tok.NumSpecialTokensToAdd())
	fmt.Printf("%q\n", tok.Decode(ids, true))
	// Output:
	// 16 1
	// "The tokenizer splits text."
}
