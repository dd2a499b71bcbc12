package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/bench/report"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

// The run's steps that write stampede's own files beside the result
// (package bench/report draws them); a failure only warns.

// plotTimeline writes the --plot-timeline page next to the result file
// and reports where, as vLLM does; a failure only warns (spec §f).
func (r *run) plotTimeline(resultPath string, s *metrics.Summary, d *metrics.RunData) {
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
		opts.OutputLens = s.OutputLens
	}
	if err := report.WriteTimelineFile(path, d, opts); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: timeline plot not written: %v\n", err)
		return
	}
	fmt.Fprintf(r.stdout, "Timeline plot saved to: %s\n", path)
}

// plotDatasetStats writes the --plot-dataset-stats figure next to the
// result file and reports where, as vLLM does; a failure only warns.
func (r *run) plotDatasetStats(resultPath string, s *metrics.Summary, d *metrics.RunData) {
	if !r.cfg.PlotDatasetStats {
		return
	}
	inputLens := make([]int, len(d.Results))
	for i := range d.Results {
		inputLens[i] = d.Results[i].PromptLen
	}
	if s.Pooling || len(inputLens) == 0 {
		fmt.Fprintln(r.stderr, "WARNING: Dataset statistics plot requires input and output length data. Ensure the benchmark completed successfully.")
		return
	}
	path := report.DatasetStatsPath(resultPath)
	if err := report.WriteDatasetStatsFile(path, inputLens, s.OutputLens); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: Failed to generate dataset statistics plot: %v\n", err)
		return
	}
	fmt.Fprintf(r.stdout, "Dataset statistics plot saved to: %s\n", path)
}

// writeReport writes --report's page for the run just made: the run goes
// through the same JSON a saved result holds, so this page and one made
// later by `stampede report` from the saved files agree. A failure only
// warns, as the timeline's does.
func (r *run) writeReport(s *metrics.Summary, res *engine.Result, p *pyout.ReportParams) error {
	path := r.cfg.Report
	if path == "" {
		return nil
	}
	if err := r.writeReportFile(path, s, res, p); err != nil {
		fmt.Fprintf(r.stderr, "WARNING: report not written: %v\n", err)
		return nil
	}
	fmt.Fprintf(r.stdout, "Report saved to: %s\n", path)
	return nil
}

func (r *run) writeReportFile(path string, s *metrics.Summary, res *engine.Result, p *pyout.ReportParams) error {
	detailed := *p
	detailed.SaveDetailed = true
	result, err := pyout.BuildResult(s, &res.Data, &detailed, time.Now())
	if err != nil {
		return err
	}
	body, err := result.MarshalJSON()
	if err != nil {
		return err
	}
	sidecar, err := json.Marshal(r.sidecar)
	if err != nil {
		return err
	}
	run, err := report.ParseReportRun("this run", body, sidecar)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	opts := report.ReportOptions{Title: "stampede report: " + r.modelID, Generated: time.Now()}
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
