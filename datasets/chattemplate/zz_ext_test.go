package chattemplate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestExternalGolden(t *testing.T) {
	root := os.Getenv("CT_EXT")
	if root == "" {
		t.Skip()
	}
	conversations := map[string]*dict{}
	for _, c := range readOrdered(t, filepath.Join(root, "conversations.json")).([]any) {
		conversations[str(c.(*dict), "name")] = c.(*dict)
	}
	for _, c := range readOrdered(t, filepath.Join(root, "golden.json")).([]any) {
		golden := c.(*dict)
		model, conv := str(golden, "model"), str(golden, "conversation")
		agp, _ := golden.get("add_generation_prompt")
		t.Run(fmt.Sprintf("%s/%s/agp=%v", model, conv, agp), func(t *testing.T) {
			tmpl, err := Load(filepath.Join(root, "models", model))
			if err != nil {
				t.Fatal(err)
			}
			tmpl.now = func() time.Time { return fixedNow }
			c := conversations[conv]
			msgs, _ := c.get("messages")
			kwargs := map[string]any{}
			if kw, ok := c.get("kwargs"); ok {
				d := kw.(*dict)
				for _, k := range d.keys {
					kwargs[k.(string)] = d.vals[k]
				}
			}
			got, err := tmpl.render(msgs.([]any), agp.(bool), kwargs)
			expectOutcome(t, golden, got, err)
		})
	}
}
