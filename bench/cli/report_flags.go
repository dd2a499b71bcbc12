package cli

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ReportFlags are stampede's options for the server's metrics and the HTML
// report; none changes Python's console block or result JSON.
type ReportFlags struct {
	ServerMetrics         string  `long:"server-metrics" nargs:"?" optional-value:"<base-url>/metrics" value-name:"URL" description:"Scrape the server's Prometheus metrics during the run (URL default: <base-url>/metrics) into the sidecar, a server-vs-client table and the report."`
	ServerMetricsInterval float64 `long:"server-metrics-interval" default:"1" description:"Seconds between two --server-metrics scrapes."`
	Report                string  `long:"report" value-name:"FILE.html" description:"Write a self-contained HTML report of the run (distributions, throughput over time, timeline, server metrics)."`
}

// defaultServerMetricsURL is --server-metrics given without a URL.
const defaultServerMetricsURL = "<base-url>/metrics"

// validateReportFlags checks the report options as argparse would check
// their types.
func (c *Config) validateReportFlags() error {
	iv := c.ServerMetricsInterval
	if !(iv > 0) || math.IsInf(iv, 1) || iv > 3600 {
		return &UsageError{Msg: fmt.Sprintf("argument --server-metrics-interval: invalid value %v: want seconds between scrapes, greater than 0 and at most 3600", iv)}
	}
	if u := c.ServerMetrics; u != "" && u != defaultServerMetricsURL &&
		!strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return &UsageError{Msg: fmt.Sprintf("argument --server-metrics: invalid URL %q: want an http:// or https:// URL, or no value for <base-url>/metrics", u)}
	}
	if r := c.Report; r != "" && !strings.HasSuffix(strings.ToLower(r), ".html") && !strings.HasSuffix(strings.ToLower(r), ".htm") {
		return &UsageError{Msg: fmt.Sprintf("argument --report: %q: want a file name ending in .html", r)}
	}
	return nil
}

// ServerMetricsURL is where --server-metrics scrapes; "" when off.
func (c *Config) ServerMetricsURL() string {
	if c.ServerMetrics == defaultServerMetricsURL {
		return strings.TrimSuffix(c.BaseURL, "/") + "/metrics"
	}
	return c.ServerMetrics
}

// ScrapeInterval is --server-metrics-interval as a duration.
func (c *Config) ScrapeInterval() time.Duration {
	return time.Duration(c.ServerMetricsInterval * float64(time.Second))
}
