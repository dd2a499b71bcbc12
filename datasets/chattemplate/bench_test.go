package chattemplate

import (
	"path/filepath"
	"strings"
	"testing"
)

// Templating runs once per prompt while datasets are built, not per
// token, so these measure throughput rather than demand zero allocations.

var benchPrompt = strings.Repeat("Pick as many lines as you can from these poem lines:\n", 20)

func BenchmarkUserTurn(b *testing.B) {
	for _, model := range []string{"llama3", "qwen3", "gemma3", "deepseek_v3", "kimi_k2"} {
		tmpl, err := Load(filepath.Join("testdata/models", model))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(model, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tmpl.UserTurn(benchPrompt, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	tmpl, err := Load("testdata/models/qwen3")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("", tmpl.source, nil); err != nil {
			b.Fatal(err)
		}
	}
}
