package py

import (
	"slices"
	"testing"
)

func TestDictOrder(t *testing.T) {
	a := NewObject()
	a.Set("x", 1)
	a.Set("y", 2)
	a.Set("z", 3)
	b := NewObject()
	b.Set("w", 0)
	b.Set("y", 20)
	a.Update(b) // {**a, **b}: y keeps its place, w goes last
	a.Delete("x")
	a.Delete("missing")
	got, _ := Dumps(a)
	if want := `{"y": 20, "z": 3, "w": 0}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if a.Len() != 3 || !slices.Equal(a.Keys(), []string{"y", "z", "w"}) {
		t.Errorf("Len %d, Keys %q", a.Len(), a.Keys())
	}
	if v, ok := a.Get("y"); !ok || v != 20 {
		t.Errorf("Get(y) = %v, %v", v, ok)
	}
	if _, ok := a.Get("x"); ok || a.Has("x") || a.Value("x") != nil {
		t.Error("a deleted key is still found")
	}

	c := a.Copy()
	c.Set("y", 0)
	c.Set("v", 5)
	if a.Value("y") != 20 || a.Has("v") {
		t.Error("changing a copy changed the original")
	}
	if !slices.Equal(c.Keys(), []string{"y", "z", "w", "v"}) {
		t.Errorf("copy keys %q", c.Keys())
	}
}
