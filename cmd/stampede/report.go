package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stampede-bench/stampede/bench/cli"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
)

const reportUsage = `usage: stampede report RESULT.json [RESULT.json ...] -o FILE.html [--title TITLE]

Writes one self-contained HTML report from saved results (--save-result,
with --save-detailed for the distributions and the timeline) and the
sidecars beside them (RESULT.stampede.json: server metrics, health, TTFT
breakdown). Several results are compared: their CDFs are overlaid. A
sweep.json (stampede sweep) is drawn as throughput against latency with
its Pareto front, and its points' results found beside it are compared.
`

// runReport is `stampede report`: it returns the exit status.
func runReport(args []string, stdout, stderr io.Writer) int {
	var files []string
	out, title := "", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func(name string) (string, bool) {
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v, true
			}
			if a == name {
				if i+1 >= len(args) {
					return "", false
				}
				i++
				return args[i], true
			}
			return "", false
		}
		switch {
		case a == "-h" || a == "--help":
			fmt.Fprint(stdout, reportUsage)
			return exitOK
		case a == "-o" || strings.HasPrefix(a, "-o=") || a == "--output" || strings.HasPrefix(a, "--output="):
			name := "-o"
			if strings.HasPrefix(a, "--output") {
				name = "--output"
			}
			v, ok := value(name)
			if !ok {
				return reportUsageError(stderr, "argument -o/--output: expected one argument")
			}
			out = v
		case a == "--title" || strings.HasPrefix(a, "--title="):
			v, ok := value("--title")
			if !ok {
				return reportUsageError(stderr, "argument --title: expected one argument")
			}
			title = v
		case strings.HasPrefix(a, "-") && a != "-":
			return reportUsageError(stderr, "unrecognized arguments: "+a)
		default:
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		return reportUsageError(stderr, "the following arguments are required: RESULT.json")
	}
	if out == "" {
		return reportUsageError(stderr, "the following arguments are required: -o/--output FILE.html")
	}
	var runs []*report.ReportRun
	var sweeps []*report.ReportSweep
	for _, f := range files {
		if report.IsSweepFile(f) {
			sw, rs, err := report.LoadReportSweep(f)
			if err != nil {
				fmt.Fprintf(stderr, "%s report: %s\n", cli.ProgramName, pyout.TerminalText(err.Error()))
				return exitError
			}
			sweeps = append(sweeps, sw)
			runs = append(runs, rs...)
			continue
		}
		rs, err := report.LoadReportRuns(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s report: %s\n", cli.ProgramName, pyout.TerminalText(err.Error()))
			return exitError
		}
		runs = append(runs, rs...)
	}
	w, err := os.Create(out)
	if err != nil {
		fmt.Fprintf(stderr, "%s report: %v\n", cli.ProgramName, err)
		return exitError
	}
	if err := report.WriteReport(w, runs, report.ReportOptions{Title: title, Generated: time.Now(), Sweeps: sweeps}); err != nil {
		w.Close()
		os.Remove(out)
		fmt.Fprintf(stderr, "%s report: %v\n", cli.ProgramName, err)
		return exitError
	}
	if err := w.Close(); err != nil {
		fmt.Fprintf(stderr, "%s report: %v\n", cli.ProgramName, err)
		return exitError
	}
	fmt.Fprintf(stdout, "Report saved to: %s\n", out)
	return exitOK
}

func reportUsageError(w io.Writer, msg string) int {
	fmt.Fprintf(w, "usage: stampede report RESULT.json [RESULT.json ...] -o FILE.html [--title TITLE]\nstampede report: error: %s\n", msg)
	return exitUsage
}
