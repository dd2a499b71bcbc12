package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiffFingerprints(t *testing.T) {
	a := &Fingerprint{Server: map[string]string{"version": "0.11.0", "model.max_model_len": "4096"},
		Client: map[string]string{"kernel": "6.1", "host": "a"}}
	b := &Fingerprint{Server: map[string]string{"version": "0.11.0", "header.server": "uvicorn"},
		Client: map[string]string{"kernel": "6.2", "host": "b"}}
	d := DiffFingerprints(a, b)
	if len(d) != 3 {
		t.Fatalf("diffs %+v, want 3 (the host's name is not one)", d)
	}
	want := []FingerprintDiff{
		{Key: "client.kernel", A: "6.1", B: "6.2", AHas: true, BHas: true},
		{Key: "server.header.server", B: "uvicorn", BHas: true},
		{Key: "server.model.max_model_len", A: "4096", AHas: true},
	}
	for i := range want {
		if d[i] != want[i] {
			t.Errorf("diff %d = %+v, want %+v", i, d[i], want[i])
		}
	}
	if len(DiffFingerprints(a, a)) != 0 {
		t.Errorf("a fingerprint differs from itself")
	}
}

func TestClientFacts(t *testing.T) {
	f := ClientFacts("d1", "")
	for _, k := range []string{"stampede", "os", "cpus", "kernel"} {
		if f[k] == "" {
			t.Errorf("%s missing from %v", k, f)
		}
	}
	if f["dataset_sha256"] != "d1" {
		t.Errorf("dataset hash %q", f["dataset_sha256"])
	}
	if _, ok := f["tokenizer_sha256"]; ok {
		t.Errorf("an unknown tokenizer hash is kept as a key")
	}
}

func TestReadSidecarHead(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.json")
	if _, _, exists, err := ReadSidecarHead(res); exists || err != nil {
		t.Fatalf("no sidecar: exists %v, %v", exists, err)
	}
	sc := &Sidecar{Version: SidecarVersion, Fingerprint: &Fingerprint{Server: map[string]string{"version": "1"}},
		Manifest: &Manifest{Argv: []string{"--model", "m"}, Seed: 7}}
	if err := SaveSidecar(SidecarPath(res), sc, false); err != nil {
		t.Fatal(err)
	}
	// --append-result's second line does not replace the first run's.
	if err := SaveSidecar(SidecarPath(res), &Sidecar{Version: SidecarVersion}, true); err != nil {
		t.Fatal(err)
	}
	fp, m, exists, err := ReadSidecarHead(res)
	if err != nil || !exists || fp.Server["version"] != "1" || m.Seed != 7 || len(m.Argv) != 2 {
		t.Errorf("read %+v %+v %v %v", fp, m, exists, err)
	}
	os.WriteFile(SidecarPath(res), []byte("{not json"), 0o644)
	if _, _, _, err := ReadSidecarHead(res); err == nil || !strings.Contains(err.Error(), "sidecar") {
		t.Errorf("a broken sidecar: %v", err)
	}
}
