package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/stampede-bench/stampede/bench"
	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/report"
)

const mergeUsage = `usage: stampede merge [--result-dir DIR] [--result-filename NAME] PARTIAL [PARTIAL ...]

Merges the partial results of one run (--save-partial; one per agent of a
--cluster-size N run, which agent K saves as PARTIAL with .agent-K before its
extension: a PARTIAL that is no file stands for those agents' files) and prints and saves the whole run as one host that
sent every request would have: Python's block, the result JSON and its
.stampede.json sidecar, following the run's own flags. Percentiles come
from every request's exact samples, never from averaging the agents'.

  --result-dir DIR        save the result there (and save it even if the run did not ask)
  --result-filename NAME  save the result under this name (likewise)
`

// runMerge is `stampede merge`: 0 when merged, 1 when a partial cannot be
// read or the partials do not make one run, 2 on bad arguments.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stampede merge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("result-dir", "", "")
	name := fs.String("result-filename", "", "")
	files, err := parseInterleaved(fs, args)
	switch {
	case err == flag.ErrHelp:
		fmt.Fprint(stdout, mergeUsage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "stampede merge: %v\n\n%s", err, mergeUsage)
		return exitUsage
	case len(files) == 0:
		fmt.Fprintf(stderr, "stampede merge: give the partial result files (--save-partial) of one run\n\n%s", mergeUsage)
		return exitUsage
	}
	m, err := cluster.MergePartialFiles(files)
	if err != nil {
		fmt.Fprintf(stderr, "stampede merge: %v\n", err)
		return exitError
	}
	if *dir != "" || *name != "" {
		m.Params.SaveResult = true
		if *dir != "" {
			m.Params.ResultDir = *dir
		}
		if *name != "" {
			m.Params.ResultFilename = *name
		}
	}
	if note := unrecordedOutputs(m); note != "" {
		fmt.Fprintf(stderr, "stampede merge: %s\n", note)
	}
	out, err := bench.WriteMerged(m, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "stampede merge: %v\n", err)
		return exitError
	}
	if out.ResultPath != "" {
		fmt.Fprintf(stderr, "stampede merge: saved %s and %s\n", out.ResultPath, report.SidecarPath(out.ResultPath))
	}
	return exitOK
}

// unrecordedOutputs is the note for a merge whose agent 0's partial does
// not record the settings of the outputs computed from the merged records
// (a partial of format version 2): whether its run asked for them cannot
// be known, and the merge prints none of them. "" when it records them.
func unrecordedOutputs(m *cluster.MergedRun) string {
	if len(m.Agents) == 0 || m.Agents[0].Settings.Outputs != nil {
		return ""
	}
	return "note: agent 0's partial (format version 2) does not record whether its run asked for --steady-state, " +
		"--warmup-time/--cooldown-time or --reasoning-metrics; the merged run prints and saves none of their blocks"
}
