package hfenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFillFromEnvironment(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "http://mirror.example/")
	t.Setenv("HF_TOKEN", "tok")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", "/data/hf")
	t.Setenv("HF_HUB_OFFLINE", "Yes")
	var s Settings
	s.Fill()
	want := Settings{Endpoint: "http://mirror.example", Token: "tok", CacheDir: filepath.Join("/data/hf", "hub"), Offline: true}
	if s != want {
		t.Errorf("Fill() = %+v, want %+v", s, want)
	}

	t.Setenv("HF_HUB_CACHE", "/cache")
	t.Setenv("HF_HUB_OFFLINE", "0")
	t.Setenv("HF_ENDPOINT", "")
	given := Settings{Token: "own"}
	given.Fill()
	if given.CacheDir != "/cache" || given.Token != "own" || given.Offline || given.Endpoint != DefaultEndpoint {
		t.Errorf("Fill() over given fields = %+v", given)
	}
}

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "refs-main")
	for _, want := range []string{"first commit", "second"} {
		if err := WriteFile(p, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != want {
			t.Errorf("after writing %q: %q, %v", want, got, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries left in the directory; want the file alone", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
