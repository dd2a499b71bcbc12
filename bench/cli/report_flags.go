package cli

import (
	"fmt"
	"math"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// ReportFlags are stampede's options for the server's metrics and the HTML
// report; none changes Python's console block or result JSON
// (plan.Reporting).
type ReportFlags struct {
	ServerMetrics         string  `long:"server-metrics" nargs:"?" optional-value:"<base-url>/metrics" value-name:"URL" description:"Scrape the server's Prometheus metrics during the run (URL default: <base-url>/metrics) into the sidecar, a server-vs-client table and the report."`
	ServerMetricsInterval float64 `long:"server-metrics-interval" default:"1" description:"Seconds between two --server-metrics scrapes."`
	Report                string  `long:"report" value-name:"FILE.html" description:"Write a self-contained HTML report of the run (distributions, throughput over time, timeline, server metrics)."`
}

// validateReportFlags checks the report options as argparse would check
// their types.
func (c *draft) validateReportFlags() error {
	iv := c.ServerMetricsInterval
	if !(iv > 0) || math.IsInf(iv, 1) || iv > 3600 {
		return &py.UsageError{Msg: fmt.Sprintf("argument --server-metrics-interval: invalid value %v: want seconds between scrapes, greater than 0 and at most 3600", iv)}
	}
	if u := c.ServerMetrics; u != "" && u != plan.DefaultServerMetricsURL &&
		!strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return &py.UsageError{Msg: fmt.Sprintf("argument --server-metrics: invalid URL %q: want an http:// or https:// URL, or no value for <base-url>/metrics", u)}
	}
	if r := c.Report; r != "" && !strings.HasSuffix(strings.ToLower(r), ".html") && !strings.HasSuffix(strings.ToLower(r), ".htm") {
		return &py.UsageError{Msg: fmt.Sprintf("argument --report: %q: want a file name ending in .html", r)}
	}
	return nil
}
