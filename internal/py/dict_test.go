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

func TestDictZeroValue(t *testing.T) {
	var d Dict[string, int]
	if d.Len() != 0 || d.Has("a") || d.Value("a") != 0 {
		t.Error("the zero dict is not empty")
	}
	d.Delete("a")
	d.Set("b", 2)
	d.Set("a", 1)
	d.Set("b", 3)
	if !slices.Equal(d.Keys(), []string{"b", "a"}) || d.Value("b") != 3 {
		t.Errorf("keys %q, b = %d", d.Keys(), d.Value("b"))
	}
}

// TestDictIndex takes a dict past linearMax, where it keeps an index,
// and checks order, replacement and deletion against a plain model.
func TestDictIndex(t *testing.T) {
	var d Dict[int, int]
	var keys []int
	model := map[int]int{}
	indexed := false
	for step := range 200 {
		k := (step * 7) % 23
		switch {
		case step%5 == 4:
			d.Delete(k)
			if i := slices.Index(keys, k); i >= 0 {
				keys = slices.Delete(keys, i, i+1)
			}
			delete(model, k)
		default:
			d.Set(k, step)
			if _, ok := model[k]; !ok {
				keys = append(keys, k)
			}
			model[k] = step
		}
		if !slices.Equal(d.Keys(), keys) {
			t.Fatalf("step %d: keys %v, want %v", step, d.Keys(), keys)
		}
		for _, k := range keys {
			if v, ok := d.Get(k); !ok || v != model[k] {
				t.Fatalf("step %d: Get(%d) = %d, %v, want %d", step, k, v, ok, model[k])
			}
		}
		if d.Has(100) {
			t.Fatal("an absent key is found")
		}
		indexed = indexed || d.index != nil
	}
	if !indexed {
		t.Fatal("the dict never grew an index")
	}
	var seen []int
	for k, v := range d.All() {
		if v != model[k] {
			t.Errorf("All: %d → %d, want %d", k, v, model[k])
		}
		seen = append(seen, k)
	}
	if !slices.Equal(seen, keys) {
		t.Errorf("All order %v, want %v", seen, keys)
	}

	c := d.Copy()
	c.Delete(keys[0])
	c.Set(100, 1)
	c.Set(keys[1], -1)
	if !slices.Equal(d.Keys(), keys) || d.Has(100) || d.Value(keys[1]) != model[keys[1]] {
		t.Error("changing a copy of an indexed dict changed the original")
	}
	if !c.Has(100) || c.Has(keys[0]) || c.Value(keys[1]) != -1 {
		t.Error("the copy did not change")
	}
}
