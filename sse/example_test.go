package sse_test

import (
	"fmt"

	"github.com/stampede-bench/stampede/sse"
)

// tokenPrinter decodes each event as it completes, the way a shard's
// per-connection state does.
type tokenPrinter struct {
	dec   *sse.Decoder
	chunk sse.Chunk
}

func (t *tokenPrinter) OnEvent(ev *sse.Event) error {
	if err := t.dec.Decode(ev.Data, &t.chunk); err != nil {
		return err
	}
	switch c := &t.chunk; {
	case c.Token:
		fmt.Printf("token %q\n", c.Text)
	case c.HasUsage:
		fmt.Printf("usage: prompt %d, completion %d\n", c.PromptTokens, c.CompletionTokens)
	case c.Done:
		fmt.Println("done")
	}
	return nil
}

func Example() {
	body := []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		": keep-alive\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n" +
		"data: [DONE]\n\n")
	var p sse.Parser
	h := &tokenPrinter{dec: sse.NewDecoder(sse.Chat)}
	// The body arrives in two reads split mid-event.
	for _, read := range [][]byte{body[:100], body[100:]} {
		if err := p.Feed(read, h); err != nil {
			fmt.Println(err)
		}
	}
	if err := p.Flush(h); err != nil {
		fmt.Println(err)
	}
	fmt.Println("comments:", p.Comments())
	// Output:
	// token ""
	// token "Hi"
	// usage: prompt 5, completion 1
	// done
	// comments: 1
}
