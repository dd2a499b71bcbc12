// Command hostile measures how stampede stands up to servers whose answers
// never end: for each of the mock's hostile faults (flood, endless-line,
// huge-headers) it runs `stampede serve` at N concurrent streams twice —
// once with a request deadline, once stopped by SIGINT — and reports from
// the mock's truth log how late the client closed each connection after
// its deadline or the signal, the client's peak RSS, the failures it
// counted and the requests the mock saw more than once.
// scripts/bench-hostile.sh drives it.
//
//	hostile -stampede bin/stampede -mockllm bin/mockllm -streams 1000
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
	"github.com/stampede-bench/stampede/cmd/mockllm/mockproc"
	"golang.org/x/sys/unix"
)

type options struct {
	stampede, mockllm, tokenizer string
	streams                      int
	timeout                      time.Duration
	settle                       time.Duration
	modes                        string
	serverCPU, clientCPU         int
	extra                        string
	detailed                     bool
	tls                          bool
}

func main() {
	var o options
	flag.StringVar(&o.stampede, "stampede", "bin/stampede", "stampede binary")
	flag.StringVar(&o.mockllm, "mockllm", "bin/mockllm", "mockllm binary")
	flag.StringVar(&o.tokenizer, "tokenizer", "datasets/tokenizer/testdata/tiny/tokenizer.json", "tokenizer for the random dataset")
	flag.IntVar(&o.streams, "streams", 1000, "concurrent streams (requests, all sent at once)")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Second, "--request-timeout-sec of the deadline run")
	flag.DurationVar(&o.settle, "settle", time.Second, "how long the streams run before SIGINT in the interrupt run")
	flag.StringVar(&o.modes, "modes", "flood,endless-line,huge-headers", "hostile faults to run, comma-separated")
	flag.IntVar(&o.serverCPU, "server-cpu", -1, "CPU for the mock (-1: any)")
	flag.IntVar(&o.clientCPU, "client-cpu", -1, "CPU for stampede (-1: any)")
	flag.StringVar(&o.extra, "stampede-args", "", "extra stampede arguments, space-separated")
	flag.BoolVar(&o.detailed, "detailed", false, "run with --save-detailed (every token's time and text kept) and list the error texts")
	flag.BoolVar(&o.tls, "tls", false, "run the mock with --tls and stampede over https:// (--insecure)")
	flag.Parse()
	for _, mode := range strings.Split(o.modes, ",") {
		for _, interrupt := range []bool{false, true} {
			if err := runCase(o, mode, interrupt); err != nil {
				fmt.Fprintf(os.Stderr, "hostile %s: %v\n", mode, err)
				os.Exit(1)
			}
		}
	}
}

// outcome is what one run of stampede against a hostile mock showed.
type outcome struct {
	exitCode     int
	wall         time.Duration // start to exit
	sigToExit    time.Duration // interrupt runs
	maxRSSKiB    int64
	completed    int
	failed       int
	errors       map[string]int // failure texts, numbers masked
	longestTurn  string
	deadlineLate string  // the client's account: longest past a deadline
	arrived      int     // R records
	sentTwice    int     // request ids with more than one R record
	lateNs       []int64 // interrupt runs, per request: close - signal
	closedBefore int     // interrupt runs: requests closed before the signal
}

func runCase(o options, mode string, interrupt bool) error {
	dir, err := os.MkdirTemp("", "hostile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	truthPath := filepath.Join(dir, "truth.log")
	mockCmd, addr, err := startMock(o, mode, truthPath)
	if err != nil {
		return err
	}
	defer mockCmd.Process.Kill()

	args := []string{o.stampede, "serve", "--backend", "vllm", "--base-url", scheme(o) + addr,
		"--model", "mock-llm", "--tokenizer", o.tokenizer, "--dataset-name", "random",
		"--random-input-len", "16", "--random-output-len", "16", "--num-prompts", strconv.Itoa(o.streams),
		"--request-rate", "inf", "--ready-check-timeout-sec", "0", "--disable-tqdm",
		"--request-id-prefix", "hostile-", "--save-result",
		"--result-dir", dir, "--result-filename", "result.json"}
	if o.detailed {
		args = append(args, "--save-detailed")
	}
	if o.tls {
		args = append(args, "--insecure")
	}
	if interrupt {
		args = append(args, "--request-timeout-sec", "3600", "--cancel-grace-sec", "0")
	} else {
		args = append(args, "--request-timeout-sec", strconv.FormatFloat(o.timeout.Seconds(), 'f', -1, 64))
	}
	if o.extra != "" {
		args = append(args, strings.Fields(o.extra)...)
	}
	if o.clientCPU >= 0 {
		args = append([]string{"taskset", "-c", strconv.Itoa(o.clientCPU)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	startNs := monoNs()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var out outcome
	var sigNs int64
	var waitErr error
	if interrupt {
		// Let every stream reach the mock and run a while, then Ctrl-C.
		ready := waitRunning(o, addr, o.streams, exited, 60*time.Second)
		if ready {
			time.Sleep(o.settle)
		}
		select {
		case waitErr = <-exited:
		default:
			sigNs = monoNs()
			cmd.Process.Signal(syscall.SIGINT)
			waitErr = <-exited
		}
	} else {
		waitErr = <-exited
	}
	exitNs := monoNs()
	out.wall = time.Duration(exitNs - startNs)
	if sigNs != 0 {
		out.sigToExit = time.Duration(exitNs - sigNs)
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return waitErr
	}
	out.exitCode = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		out.maxRSSKiB = ru.Maxrss
	}
	if m := regexp.MustCompile(`longest loop turn ([^,]+),`).FindStringSubmatch(stderr.String()); m != nil {
		out.longestTurn = m[1]
	}
	if m := regexp.MustCompile(`closed at most (.+?) after their deadline`).FindStringSubmatch(stderr.String()); m != nil {
		out.deadlineLate = m[1]
	}

	mockCmd.Process.Signal(syscall.SIGINT)
	mockCmd.Wait()
	truth, err := mock.ReadTruthLog(truthPath)
	if err != nil {
		return err
	}
	if err := readResult(filepath.Join(dir, "result.json"), &out); err != nil {
		fmt.Fprintf(os.Stderr, "stampede stdout:\n%s\nstderr:\n%s\n", stdout.String(), stderr.String())
		return err
	}
	analyse(truth, sigNs, &out)
	report(o, mode, interrupt, &out)
	return nil
}

func monoNs() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// scheme is the mock's URL scheme.
func scheme(o options) string {
	if o.tls {
		return "https://"
	}
	return "http://"
}

// startMock runs the mock with the hostile fault on every request.
func startMock(o options, mode, truthPath string) (*exec.Cmd, string, error) {
	args := []string{"--fault", mode, "--truth-log", truthPath}
	if o.tls {
		args = append(args, "--tls")
	}
	return mockproc.Start(o.mockllm, o.serverCPU, io.Discard, args...)
}

// waitRunning polls the mock's /metrics until n answers are running, the
// client exited, or limit passed.
func waitRunning(o options, addr string, n int, exited chan error, limit time.Duration) bool {
	re := regexp.MustCompile(`(?m)^vllm:num_requests_running\{[^}]*\} (\S+)$`)
	client := http.Client{Timeout: time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return false
		default:
		}
		if resp, err := client.Get(scheme(o) + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := re.FindSubmatch(b); m != nil {
				if v, _ := strconv.ParseFloat(string(m[1]), 64); int(v) >= n {
					return true
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

var digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

func readResult(path string, out *outcome) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("result JSON: %w", err)
	}
	var r struct {
		Completed int      `json:"completed"`
		Failed    int      `json:"failed"`
		Errors    []string `json:"errors"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("result JSON %s: %w", path, err)
	}
	out.completed, out.failed = r.Completed, r.Failed
	out.errors = map[string]int{}
	for _, e := range r.Errors {
		if e != "" {
			out.errors[digits.ReplaceAllString(e, "N")]++
		}
	}
	return nil
}

// analyse counts from the truth log the requests the mock saw twice and,
// after a SIGINT, how long each connection still open at the signal took
// to close. (A deadline's lateness comes from the client itself: the mock
// sees a request only some time after the client started it, and that
// time is not known here.)
func analyse(truth []mock.TruthRequest, sigNs int64, out *outcome) {
	seen := map[string]int{}
	for _, r := range truth {
		out.arrived++
		if seen[r.RequestID]++; seen[r.RequestID] == 2 {
			out.sentTwice++
		}
		if sigNs == 0 || r.ClosedNs == 0 {
			continue
		}
		if r.ClosedNs < sigNs {
			out.closedBefore++
			continue
		}
		out.lateNs = append(out.lateNs, r.ClosedNs-sigNs)
	}
	slices.Sort(out.lateNs)
}

func report(o options, mode string, interrupt bool, out *outcome) {
	what := fmt.Sprintf("deadline (--request-timeout-sec %g)", o.timeout.Seconds())
	if interrupt {
		what = "Ctrl-C (SIGINT after every stream ran " + o.settle.String() + ", --cancel-grace-sec 0)"
	}
	fmt.Printf("== %s × %d streams, %s\n", mode, o.streams, what)
	fmt.Printf("exit %d after %.2fs; peak RSS %.1f MB; longest loop turn %s\n",
		out.exitCode, out.wall.Seconds(), float64(out.maxRSSKiB)/1024, out.longestTurn)
	switch {
	case interrupt && out.sigToExit > 0:
		fmt.Printf("SIGINT → exit (results printed and saved) %.1f ms\n", float64(out.sigToExit)/1e6)
		if len(out.lateNs) > 0 {
			fmt.Printf("SIGINT → connection closed (mock's view) ms: p50 %.1f  p99 %.1f  max %.1f  (n=%d; %d ended before)\n",
				ms(pct(out.lateNs, 50)), ms(pct(out.lateNs, 99)), ms(out.lateNs[len(out.lateNs)-1]), len(out.lateNs), out.closedBefore)
		} else {
			fmt.Printf("SIGINT: no stream in flight (all %d ended before)\n", out.closedBefore)
		}
	case interrupt:
		fmt.Println("SIGINT: not sent, the run had ended")
	case out.deadlineLate != "":
		fmt.Printf("deadline → connection closed (client's account): max %s\n", out.deadlineLate)
	default:
		fmt.Println("deadline: none fired (every request ended before its deadline)")
	}
	fmt.Printf("requests: completed %d, failed %d; mock saw %d, sent twice %d\n", out.completed, out.failed, out.arrived, out.sentTwice)
	type kv struct {
		text string
		n    int
	}
	var errs []kv
	for k, v := range out.errors {
		errs = append(errs, kv{k, v})
	}
	sort.Slice(errs, func(i, j int) bool {
		return errs[i].n > errs[j].n || errs[i].n == errs[j].n && errs[i].text < errs[j].text
	})
	for i, e := range errs {
		if i == 4 {
			fmt.Printf("  ... %d more kinds\n", len(errs)-i)
			break
		}
		fmt.Printf("  %5d × %s\n", e.n, e.text)
	}
	fmt.Println()
}

func pct(sorted []int64, p float64) int64 {
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }
