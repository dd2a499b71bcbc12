package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/stampede-bench/stampede/bench/pyout"
	"github.com/stampede-bench/stampede/engine"
	"github.com/stampede-bench/stampede/metrics"
)

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
	run, err := ParseReportRun("this run", body, sidecar)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	opts := ReportOptions{Title: "stampede report: " + r.modelID, Generated: time.Now()}
	if th := r.cfg.TimelineITLThresholdsMs; len(th) == 2 {
		opts.ITLThresholdsMs = [2]float64{th[0], th[1]}
	}
	if err := WriteReport(f, []*ReportRun{run}, opts); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
