package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMultiturnExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"id":"a","messages":[{"role":"assistant","content":"x"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stream string
		want   string
	}{
		{[]string{"multiturn", "--help"}, 0, "stdout", "usage: stampede multiturn"},
		{[]string{"multiturn"}, 2, "stderr", "error: the following arguments are required: --input-file"},
		{[]string{"multiturn", "--input-file", bad, "--num-clients", "x"}, 2, "stderr", "argument --num-clients"},
		{[]string{"multiturn", "--input-file", bad, "--model", "m"}, 1, "stderr", `messages[0].role "assistant"`},
		// Its errors name it, serve's options' too.
		{[]string{"multiturn", "--input-file", "no/such.json", "--model", "m"}, 1, "stderr", "stampede multiturn: --input-file no/such.json"},
		{[]string{"multiturn", "--input-file", bad, "--num-prompts", "x"}, 2, "stderr",
			"usage: stampede multiturn --input-file FILE [multiturn options] [serve options]\nstampede multiturn: error: argument --num-prompts"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		out := stderr.String()
		if tc.stream == "stdout" {
			out = stdout.String()
		}
		if code != tc.code || !strings.Contains(out, tc.want) || strings.Contains(out, "stampede serve") {
			t.Errorf("%q: exit %d, %s %q; want %d and %q", tc.args, code, tc.stream, out, tc.code, tc.want)
		}
	}
}
