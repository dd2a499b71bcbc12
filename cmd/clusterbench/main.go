// Command clusterbench judges a cluster run against the mock: it merges
// the truth logs of the mock processes that served it (--reuse-port) and
// matches every request of the merged result (--save-detailed, request
// ids "<prefix><index>") to the server's record of it, then reports how
// many requests and token events match, the token error (a token's time
// after its stream's first token, client minus server) and each agent's
// clock offset bound from the sidecar.
//
//	clusterbench -result run.json -truth mock1.log,mock2.log
//
// scripts/bench-cluster.sh runs the whole benchmark.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/cmd/mockllm/mock"
)

func main() {
	result := flag.String("result", "", "merged result JSON, saved with --save-detailed")
	truth := flag.String("truth", "", "comma-separated truth logs of the mock processes")
	flag.Parse()
	if err := run(*result, strings.Split(*truth, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "clusterbench:", err)
		os.Exit(1)
	}
}

type detailed struct {
	Completed int         `json:"completed"`
	Failed    int         `json:"failed"`
	ITLs      [][]float64 `json:"itls"`
}

type sidecar struct {
	Cluster report.SidecarCluster `json:"cluster"`
}

func run(resultPath string, truthPaths []string) error {
	var res detailed
	if err := readJSON(resultPath, &res); err != nil {
		return err
	}
	// Request id "<prefix><index>": the index is the trailing digits.
	byIndex := map[int]mock.TruthRequest{}
	for _, path := range truthPaths {
		log, err := mock.ReadTruthLog(path)
		if err != nil {
			return err
		}
		for _, tr := range log {
			digits := tr.RequestID[strings.LastIndexFunc(tr.RequestID, func(r rune) bool { return r < '0' || r > '9' })+1:]
			i, err := strconv.Atoi(digits)
			if err != nil {
				return fmt.Errorf("%s: request id %q ends in no index", path, tr.RequestID)
			}
			if _, dup := byIndex[i]; dup {
				return fmt.Errorf("request %d is in the truth logs twice", i)
			}
			byIndex[i] = tr
		}
	}
	var errs []float64 // µs
	tokens, mismatched := 0, 0
	for i, itls := range res.ITLs {
		tr, ok := byIndex[i]
		if !ok {
			continue
		}
		if len(itls)+1 != len(tr.Tokens) {
			mismatched++
			continue
		}
		client := 0.0
		for j, gap := range itls {
			client += gap
			server := float64(tr.Tokens[j+1].SentNs-tr.Tokens[0].SentNs) / 1e9
			errs = append(errs, (client-server)*1e6)
		}
		tokens += len(tr.Tokens)
	}
	fmt.Printf("requests: %d in the result (%d completed, %d failed), %d in the truth logs, %d with another token count\n",
		len(res.ITLs), res.Completed, res.Failed, len(byIndex), mismatched)
	if len(errs) > 0 {
		slices.Sort(errs)
		q := func(p float64) float64 { return errs[min(len(errs)-1, int(math.Ceil(p*float64(len(errs))))-1)] }
		fmt.Printf("token error after the stream's first token (client − server, µs) over %d tokens: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  min %.1f\n",
			tokens, q(0.50), q(0.99), q(0.999), errs[len(errs)-1], errs[0])
	}
	var sc sidecar
	if err := readJSON(report.SidecarPath(resultPath), &sc); err != nil {
		return err
	}
	for _, a := range sc.Cluster.Agents {
		c := a.Clock
		fmt.Printf("agent %d: %d requests, clock offset %v ± %v (min RTT %v over %d probes), schedule started %v after the announced start\n",
			a.Index, a.Requests, time.Duration(c.OffsetNs), time.Duration(c.ErrorBoundNs), time.Duration(c.MinRTTNs), c.Probes, time.Duration(c.StartLateNs))
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
