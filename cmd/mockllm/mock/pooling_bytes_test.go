package mock

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
)

// TestPooledBytesFormats: encoding_format "bytes" answers with float32
// vectors in an octet-stream body and vLLM's metadata header; "bytes_only"
// with the same body and no header.
func TestPooledBytesFormats(t *testing.T) {
	t.Parallel()
	const dim = 8
	_, base := startServer(t, Config{EmbeddingDim: dim})
	for _, tt := range []struct {
		path, format, idPrefix string
	}{
		{"/v1/embeddings", "bytes", "embd-"},
		{"/v1/embeddings", "bytes_only", ""},
		{"/pooling", "bytes", "pool-"},
	} {
		t.Run(tt.path+" "+tt.format, func(t *testing.T) {
			resp := post(t, base+tt.path, `{"model":"mock-llm","input":["ab","c"],"encoding_format":"`+tt.format+`"}`)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" || len(resp.TransferEncoding) != 1 {
				t.Fatalf("status %d, content type %q, transfer encoding %v", resp.StatusCode, resp.Header.Get("Content-Type"), resp.TransferEncoding)
			}
			if len(body) != 2*4*dim {
				t.Fatalf("body of %d bytes, want %d", len(body), 2*4*dim)
			}
			for v := range 2 {
				var norm float64
				for d := range dim {
					f := math.Float32frombits(binary.LittleEndian.Uint32(body[4*(v*dim+d):]))
					norm += float64(f) * float64(f)
				}
				if math.Abs(norm-1) > 1e-5 {
					t.Errorf("vector %d has squared norm %v, want 1", v, norm)
				}
			}
			header := resp.Header.Get("metadata")
			if tt.format == "bytes_only" {
				if header != "" {
					t.Errorf("bytes_only answer has metadata %q", header)
				}
				return
			}
			if !strings.Contains(header, `"usage": {"prompt_tokens": 3, "total_tokens": 3}`) {
				t.Errorf("metadata not in json.dumps form with usage: %s", header)
			}
			var meta struct {
				ID    string `json:"id"`
				Model string `json:"model"`
				Data  []struct {
					Index, Start, End int
					Shape             []int
					EmbedDType        string `json:"embed_dtype"`
				} `json:"data"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(header), &meta); err != nil {
				t.Fatalf("metadata %q: %v", header, err)
			}
			if !strings.HasPrefix(meta.ID, tt.idPrefix) || meta.Model != "mock-llm" || meta.Usage.PromptTokens != 3 || len(meta.Data) != 2 {
				t.Fatalf("metadata %+v", meta)
			}
			for i, d := range meta.Data {
				if d.Index != i || d.Start != i*4*dim || d.End != (i+1)*4*dim || len(d.Shape) != 1 || d.Shape[0] != dim || d.EmbedDType != "float32" {
					t.Errorf("metadata data[%d] = %+v", i, d)
				}
			}
		})
	}
}
