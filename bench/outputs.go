package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/stampede-bench/stampede/bench/cluster"
	"github.com/stampede-bench/stampede/bench/endpoint"
	"github.com/stampede-bench/stampede/bench/outcome"
	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/metrics"
)

// The run's files: the result JSON (Python's), its PyTorch side file and
// the sidecar, --save-partial's partial, and stampede's own pages beside
// the result (package bench/report draws them), whose failure only warns.

// saveOutputs writes every file of a finished run: the result and its side
// files, the --save-partial partial and the --report page.
func (r *run) saveOutputs(model endpoint.Model, o *outcome.Outcome, sidecar *report.Sidecar) error {
	files := &report.Saved{}
	if err := r.save(o, sidecar, files); err != nil {
		files.Fail(err)
	}
	if r.cfg.SavePartial != "" && !r.cfg.Clustered() { // an agent saved its own
		files.Add(r.cfg.SavePartial, r.savePartial(o, sidecar))
	}
	r.writeReport(model, o, sidecar, files)
	o.Files = files.Written()
	return files.Err()
}

// save writes the result JSON with --save-result or --append-result (and
// its PyTorch side file and the sidecar), the timeline with
// --plot-timeline and the dataset figure with --plot-dataset-stats, into
// files. The name is fitted to the filesystem as checkResultPath checked
// it. It sets the outcome's ResultPath. Its error is for what stops every
// file (the metadata, the name).
func (r *run) save(o *outcome.Outcome, sidecar *report.Sidecar, files *report.Saved) error {
	s, d, p := o.Summary, o.Data, o.Params
	if err := pyout.CheckMetadata(p.Metadata); err != nil {
		return err
	}
	if !p.SaveResult && !p.AppendResult && !p.PlotTimeline {
		return nil
	}
	res, err := pyout.BuildResult(s, d, p, o.Options.CountTokens, time.Now())
	if err != nil {
		return err
	}
	name, err := pyout.ResultFilename(&p.RunSettings, res.Date)
	if err != nil {
		return err
	}
	if r.nameMax > 0 {
		if name, err = report.FitResultPath(name, r.nameMax); err != nil {
			return err
		}
	}
	if p.SaveResult || p.AppendResult {
		o.ResultPath = name
		if err := pyout.SaveResult(name, res, p.AppendResult); err != nil {
			files.Fail(fmt.Errorf("saving results to %s: %w", name, err))
		} else {
			files.Add(name, nil)
		}
		if r.cfg.SaveToPyTorchFormat {
			r.savePyTorch(pyout.PyTorchPath(name), res, files)
		}
		if p.SaveDetailed {
			r.saveRecordLog(name, o, sidecar, files)
		}
		path := report.SidecarPath(name)
		files.Add(path, report.SaveSidecar(path, sidecar, p.AppendResult))
	}
	r.plotTimeline(name, o, files)
	r.plotDatasetStats(name, o, files)
	return nil
}

// saveRecordLog saves the run's sorted record log beside the result
// (--save-detailed): every request's record exactly, every gap in
// nanoseconds, in the compact form metrics.OpenLog reads.
func (r *run) saveRecordLog(resultPath string, o *outcome.Outcome, sidecar *report.Sidecar, files *report.Saved) {
	path := report.RecordLogPath(resultPath)
	if err := o.Data.Log.WriteFile(path); err != nil {
		files.Fail(fmt.Errorf("saving the record log to %s: %w", path, err))
		return
	}
	files.Add(path, nil)
	if sidecar.Health.RecordLog != nil {
		sidecar.Health.RecordLog.SavedAs = path
	}
}

// savePyTorch writes the PyTorch benchmark records of res to path
// ($SAVE_TO_PYTORCH_BENCHMARK_FORMAT), when it holds any.
func (r *run) savePyTorch(path string, res *pyout.Result, files *report.Saved) {
	written, err := pyout.WritePyTorchBenchmark(path, r.cfg, res)
	switch {
	case err != nil:
		files.Fail(fmt.Errorf("saving PyTorch benchmark records to %s: %w", path, err))
	case written:
		files.Add(path, nil)
	}
}

// savePartial saves a single-host run as the one partial of a cluster of
// one (--save-partial without --cluster-size).
func (r *run) savePartial(o *outcome.Outcome, sidecar *report.Sidecar) error {
	part := cluster.SplitOutcome(o, r.cfg.Breakdown, sidecar.Health, 1, nil)[0]
	part.Header.Settings.Outputs = cluster.OutputsOf(r.cfg)
	readings := &cluster.ServerReadings{Metrics: sidecar.ServerMetrics, PrefixCache: sidecar.PrefixCache, Spans: sidecar.ServerSpans,
		SpecDecode: o.Params.SpecDecode, Diffusion: o.Params.Diffusion}
	if !readings.Empty() {
		part.Header.Server = readings
	}
	return cluster.SavePartialFile(r.cfg.SavePartial, part)
}

// plotTimeline writes the --plot-timeline page next to the result file
// and reports where, as vLLM does; a failure only warns (spec §f).
func (r *run) plotTimeline(resultPath string, o *outcome.Outcome, files *report.Saved) {
	s, d := o.Summary, o.Data
	c := r.cfg
	if !c.PlotTimeline || len(c.TimelineITLThresholdsMs) != 2 {
		return
	}
	path := report.TimelinePath(resultPath)
	opts := report.TimelineOptions{
		Title:           "Request timeline: " + resultPath,
		ITLThresholdsMs: [2]float64{c.TimelineITLThresholdsMs[0], c.TimelineITLThresholdsMs[1]},
	}
	if !s.Pooling {
		count := o.Options.CountTokens
		opts.OutputLen = func(r *metrics.RequestResult) int { return r.OutputLen(count) }
	}
	if err := report.WriteTimelineFile(path, d, opts); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: timeline plot not written: %v\n", err)
		return
	}
	files.Add(path, nil)
	fmt.Fprintf(r.stdout, "Timeline plot saved to: %s\n", path)
}

// plotDatasetStats writes the --plot-dataset-stats figure next to the
// result file and reports where, as vLLM does; a failure only warns.
func (r *run) plotDatasetStats(resultPath string, o *outcome.Outcome, files *report.Saved) {
	if !r.cfg.PlotDatasetStats {
		return
	}
	s := o.Summary
	// The plot's histograms take the lists: two ints a request, only
	// with --plot-dataset-stats.
	var inputLens, outputLens []int
	for _, rr := range o.Data.Log.All() {
		inputLens = append(inputLens, rr.PromptLen)
		outputLens = append(outputLens, rr.OutputLen(o.Options.CountTokens))
	}
	if s.Pooling || len(inputLens) == 0 {
		fmt.Fprintln(r.stderr, "WARNING: Dataset statistics plot requires input and output length data. Ensure the benchmark completed successfully.")
		return
	}
	path := report.DatasetStatsPath(resultPath)
	if err := report.WriteDatasetStatsFile(path, inputLens, outputLens); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: Failed to generate dataset statistics plot: %v\n", err)
		return
	}
	files.Add(path, nil)
	fmt.Fprintf(r.stdout, "Dataset statistics plot saved to: %s\n", path)
}

// writeReport writes --report's page for the run just made: the run goes
// through the same JSON a saved result holds, so this page and one made
// later by `stampede report` from the saved files agree. A failure only
// warns, as the timeline's does.
func (r *run) writeReport(model endpoint.Model, o *outcome.Outcome, sidecar *report.Sidecar, files *report.Saved) {
	path := r.cfg.Report
	if path == "" {
		return
	}
	if err := r.writeReportFile(path, model, o, sidecar); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: report not written: %v\n", err)
		return
	}
	files.Add(path, nil)
	fmt.Fprintf(r.stdout, "Report saved to: %s\n", path)
}

func (r *run) writeReportFile(path string, model endpoint.Model, o *outcome.Outcome, sidecar *report.Sidecar) error {
	detailed := *o.Params
	detailed.SaveDetailed = true
	result, err := pyout.BuildResult(o.Summary, o.Data, &detailed, o.Options.CountTokens, time.Now())
	if err != nil {
		return err
	}
	body, err := result.MarshalJSON()
	if err != nil {
		return err
	}
	sidecarJSON, err := json.Marshal(sidecar)
	if err != nil {
		return err
	}
	run, err := report.ParseReportRun("this run", body, sidecarJSON)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	opts := report.ReportOptions{Title: "stampede report: " + model.ID, Generated: time.Now()}
	if th := r.cfg.TimelineITLThresholdsMs; len(th) == 2 {
		opts.ITLThresholdsMs = [2]float64{th[0], th[1]}
	}
	if err := report.WriteReport(f, []*report.ReportRun{run}, opts); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
