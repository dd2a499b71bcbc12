package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/stampede-bench/stampede/internal/buildinfo"
)

// Fingerprint is the sidecar's "fingerprint": what was measured and what
// measured it, gathered once before the clock starts, so that two results
// can be checked to be like for like (stampede compare prints what differs
// before any number). Each side is a flat map of facts, key → text, so
// that two fingerprints differ key by key.
type Fingerprint struct {
	// Server is what the server said about itself (endpoint.Fingerprint's
	// keys: version, model.*, header.server, info.*).
	Server map[string]string `json:"server"`
	// ServerProblems are the server's questions that failed (not a route
	// the server lacks, which only leaves its keys out).
	ServerProblems []string `json:"server_problems,omitempty"`
	// Client is the client's side: stampede's build, the machine, and the
	// hashes of the data the run read (ClientFacts' keys).
	Client map[string]string `json:"client"`
}

// Manifest is the sidecar's "manifest": what `stampede rerun` needs to run
// the same run again. Argv is the command line after the program's name
// (the subcommand included when one was given), with secrets redacted.
type Manifest struct {
	Argv []string `json:"argv"`
	Seed int      `json:"seed"`
	// DatasetSHA256 and TokenizerSHA256 are the hex SHA-256 of the
	// dataset file (or folder) and the tokenizer file; "" when the run
	// read none (a random dataset, the server's /tokenize).
	DatasetSHA256   string `json:"dataset_sha256"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	// Tokenizer is the tokenizer's name as the run resolved it
	// (--tokenizer, else the model's id), so a rerun can hash the same.
	Tokenizer string `json:"tokenizer"`
	// Targets are the servers the run sent to (plan.Plan.Origins), so a
	// rerun can tell a command line that no longer sends where the run
	// did; absent from manifests older than it.
	Targets []string `json:"targets,omitempty"`
}

// ClientFacts is the client's side of a fingerprint: stampede's build
// (`stampede --version`), the OS, kernel, CPU model and count, the host's
// name, and the data's hashes (omitted when "").
func ClientFacts(datasetSHA256, tokenizerSHA256 string) map[string]string {
	facts := map[string]string{
		"stampede": buildinfo.Read().String(),
		"os":       runtime.GOOS + "/" + runtime.GOARCH,
		"cpus":     strconv.Itoa(runtime.NumCPU()),
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		facts["kernel"] = utsText(u.Release[:])
		facts["host"] = utsText(u.Nodename[:])
	}
	if m := cpuModel(); m != "" {
		facts["cpu_model"] = m
	}
	if datasetSHA256 != "" {
		facts["dataset_sha256"] = datasetSHA256
	}
	if tokenizerSHA256 != "" {
		facts["tokenizer_sha256"] = tokenizerSHA256
	}
	return facts
}

// utsText is a NUL-terminated field of uname(2).
func utsText[T int8 | uint8](field []T) string {
	b := make([]byte, 0, len(field))
	for _, c := range field {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// cpuModel is /proc/cpuinfo's first "model name" ("" elsewhere).
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// FingerprintDiff is one fact that differs between two fingerprints; A or
// B is "" (and Missing says which) where one side lacks the key.
type FingerprintDiff struct {
	Key  string `json:"key"`
	A    string `json:"a"`
	B    string `json:"b"`
	AHas bool   `json:"a_has"`
	BHas bool   `json:"b_has"`
}

// DiffFingerprints lists the facts that differ between a and b, server
// facts as "server.KEY" and client facts as "client.KEY", sorted. The
// host's name is left out: another machine of the same kind is like for
// like, and its kernel and CPU are compared.
func DiffFingerprints(a, b *Fingerprint) []FingerprintDiff {
	var out []FingerprintDiff
	for _, side := range []struct {
		prefix string
		a, b   map[string]string
	}{{"server.", a.Server, b.Server}, {"client.", a.Client, b.Client}} {
		keys := map[string]bool{}
		for k := range side.a {
			keys[k] = true
		}
		for k := range side.b {
			keys[k] = true
		}
		for k := range keys {
			if side.prefix == "client." && k == "host" {
				continue
			}
			va, okA := side.a[k]
			vb, okB := side.b[k]
			if va != vb || okA != okB {
				out = append(out, FingerprintDiff{Key: side.prefix + k, A: va, B: vb, AHas: okA, BHas: okB})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// sidecarHead is what a reader of a saved sidecar needs of it without the
// rest: the fingerprint and the manifest.
type sidecarHead struct {
	Fingerprint *Fingerprint `json:"fingerprint"`
	Manifest    *Manifest    `json:"manifest"`
}

// ReadSidecarHead reads the fingerprint and the manifest of the result file
// resultPath's sidecar: of its first line (with --append-result, the first
// run). exists is false when there is no sidecar (a result of vLLM's own
// tool); the fields are nil when the sidecar predates them.
func ReadSidecarHead(resultPath string) (fp *Fingerprint, m *Manifest, exists bool, err error) {
	path := SidecarPath(resultPath)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var head sidecarHead
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, nil, true, fmt.Errorf("sidecar %s: %w", path, err)
	}
	return head.Fingerprint, head.Manifest, true, nil
}
