package py

import (
	"encoding/json"
	"testing"
)

func TestNullNonFinite(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity, 1.5], "c": "NaN Infinity \" NaN"}`
	var v map[string]any
	if err := json.Unmarshal(NullNonFinite([]byte(in)), &v); err != nil {
		t.Fatal(err)
	}
	if v["a"] != nil || v["b"].([]any)[0] != nil || v["b"].([]any)[2] != 1.5 || v["c"] != `NaN Infinity " NaN` {
		t.Errorf("got %v", v)
	}
}
