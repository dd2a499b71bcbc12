package datasets

import (
	"reflect"
	"testing"
)

func TestRegistryNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Registry {
		if d.Name == "" || seen[d.Name] {
			t.Errorf("dataset name %q empty or repeated", d.Name)
		}
		seen[d.Name] = true
		if Lookup(d.Name) != d {
			t.Errorf("Lookup(%q) does not find its row", d.Name)
		}
	}
	if Lookup("no-such-dataset") != nil {
		t.Error("Lookup of an unknown name found a dataset")
	}
}

// TestCopyLengths checks the copy-of tags against main_async's list:
// --input-len reaches random_input_len only, --output-len the output
// lengths of random, sharegpt, custom, hf, spec_bench and
// prefix_repetition, and nothing else changes.
func TestCopyLengths(t *testing.T) {
	var f Flags
	in, out := 7, 9
	f.CopyLengths(&in, &out)
	want := Flags{}
	want.RandomInputLen = 7
	want.RandomOutputLen = 9
	want.SharegptOutputLen = &out
	want.CustomOutputLen = 9
	want.HFOutputLen = &out
	want.SpecBenchOutputLen = 9
	want.PrefixRepetitionOutputLen = 9
	if !reflect.DeepEqual(f, want) {
		t.Errorf("CopyLengths(7, 9) = %+v, want %+v", f, want)
	}
	if f.SharegptOutputLen == f.HFOutputLen {
		t.Error("the copies share one int; setting one would change the other")
	}

	var none Flags
	none.CopyLengths(nil, nil)
	if !reflect.DeepEqual(none, Flags{}) {
		t.Errorf("CopyLengths(nil, nil) changed %+v", none)
	}
}
