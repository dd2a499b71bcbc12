package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-bench/stampede/bench/internal/benchtest"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

// TestURLCredentialsNeverShown runs a benchmark against a base URL with
// credentials: nothing printed or saved contains them, and an error
// naming the server's URL leaves them out too.
func TestURLCredentialsNeverShown(t *testing.T) {
	srv, err := mock.Start(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, tt := range []struct {
		name, base string
		wantErr    bool
	}{
		{name: "run", base: "http://alice:s3cret@" + srv.Addr()},
		{name: "unreachable", base: "http://alice:s3cret@127.0.0.1:1", wantErr: true},
	} {
		c, err := benchtest.ParseArgs([]string{"--base-url", tt.base, "--tokenizer", tinyTokenizer, "--disable-tqdm",
			"--dataset-name", "random", "--num-prompts", "2", "--random-input-len", "16", "--random-output-len", "2",
			"--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", tt.name + ".json"}, benchtest.NoEnv)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		err = Run(context.Background(), c, &out, &errOut)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s: Run error %v", tt.name, err)
		}
		shown := out.String() + errOut.String()
		if err != nil {
			shown += err.Error()
		}
		if saved, err := os.ReadFile(filepath.Join(dir, tt.name+".json")); err == nil {
			shown += string(saved)
		}
		if strings.Contains(shown, "s3cret") || strings.Contains(shown, "alice") {
			t.Errorf("%s: the credentials are shown:\n%s", tt.name, shown)
		}
	}
}
