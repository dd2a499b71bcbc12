package hfenv

import (
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
