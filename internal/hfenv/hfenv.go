// Package hfenv reads the Hugging Face hub's environment as the
// huggingface_hub library does: the endpoint, the token, the hub cache
// directory and offline mode. The tokenizer resolver and the hub dataset
// reader share it, and its atomic writes, so both find and fill the same
// cache.
package hfenv

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the hub's address when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// Settings are the hub settings a download or cache lookup needs.
type Settings struct {
	Endpoint string // HF_ENDPOINT, without a trailing slash
	Token    string // HF_TOKEN
	CacheDir string // HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
	Offline  bool   // HF_HUB_OFFLINE set to 1, true, yes or on
}

// Fill sets each empty field of s from the environment (Offline only ever
// turns on).
func (s *Settings) Fill() {
	if s.Endpoint == "" {
		s.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if s.Endpoint == "" {
		s.Endpoint = DefaultEndpoint
	}
	s.Endpoint = strings.TrimRight(s.Endpoint, "/")
	if s.Token == "" {
		s.Token = os.Getenv("HF_TOKEN")
	}
	if s.CacheDir == "" {
		s.CacheDir = os.Getenv("HF_HUB_CACHE")
	}
	if s.CacheDir == "" {
		if home := os.Getenv("HF_HOME"); home != "" {
			s.CacheDir = filepath.Join(home, "hub")
		} else if dir, err := os.UserHomeDir(); err == nil {
			s.CacheDir = filepath.Join(dir, ".cache", "huggingface", "hub")
		}
	}
	switch strings.ToLower(os.Getenv("HF_HUB_OFFLINE")) {
	case "1", "true", "yes", "on":
		s.Offline = true
	}
}

// WriteFile writes data to path in the hub cache through a temporary file
// in the same directory and a rename, so that a concurrent reader never
// sees half of it.
func WriteFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
