package cli

import (
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/stampede-bench/stampede/bench/plan"
	"github.com/stampede-bench/stampede/internal/py"
)

// ReportFlags are stampede's options for the server's metrics and the HTML
// report; none changes Python's console block or result JSON
// (plan.Reporting).
type ReportFlags struct {
	ServerMetrics         string   `long:"server-metrics" nargs:"?" optional-value:"<base-url>/metrics" value-name:"URL" description:"Scrape the server's Prometheus metrics during the run (URL default: <base-url>/metrics) into the sidecar, a server-vs-client table and the report."`
	ServerMetricsInterval float64  `long:"server-metrics-interval" default:"1" description:"Seconds between two --server-metrics scrapes."`
	ServerMetricsHeader   []string `long:"server-metrics-header" nargs:"*" value-name:"KEY=VALUE" description:"HTTP headers for the --server-metrics scrapes only. --header, $OPENAI_API_KEY and --base-url's user:password go to the base URL's scheme, host and port alone; a --server-metrics URL elsewhere gets these headers and its own user:password@ instead."`
	ColdPrefixCache       bool     `long:"cold-prefix-cache" description:"After the warm-up, just before the clock starts, empty the server's prefix cache (POST <base-url>/reset_prefix_cache; vLLM serves it with VLLM_SERVER_DEV_MODE=1); the run stops with an error when the server does not offer it."`
	Report                string   `long:"report" value-name:"FILE.html" description:"Write a self-contained HTML report of the run (distributions, throughput over time, timeline, server metrics)."`
	OTLPReceiver          string   `long:"otlp-receiver" value-name:"ADDR" description:"Receive the server's OpenTelemetry trace spans (OTLP/gRPC and OTLP/HTTP protobuf on one port, e.g. 127.0.0.1:4317) and join each to its request: every request carries a W3C traceparent derived from its x-request-id, and the sidecar gains server_spans (the server's queue, prefill and first-token phases per request). Point the server's exporter here (vLLM: --otlp-traces-endpoint)."`
	OTLPReceiverToken     string   `long:"otlp-receiver-token" value-name:"SECRET" description:"Take only the span exports that carry this bearer token, SECRET being TOKEN (Authorization: Bearer TOKEN; what an exporter sends when OTEL_EXPORTER_OTLP_HEADERS is authorization=Bearer TOKEN), or this header NAME=VALUE; the others are refused (HTTP 401, gRPC Unauthenticated) and counted. Needs --otlp-receiver."`
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
	if err := c.buildScrapeTarget(); err != nil {
		return err
	}
	if a := c.OTLPReceiver; a != "" {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return py.UsageErrorf("argument --otlp-receiver: invalid address %q: want HOST:PORT, such as 127.0.0.1:4317", a)
		}
	}
	if t := c.OTLPReceiverToken; t != "" {
		if c.OTLPReceiver == "" {
			return py.UsageErrorf("argument --otlp-receiver-token: it needs --otlp-receiver, the receiver it guards")
		}
		if _, _, err := plan.ReceiverTokenHeader(t); err != nil {
			return &py.UsageError{Msg: err.Error()}
		}
	}
	if r := c.Report; r != "" && !strings.HasSuffix(strings.ToLower(r), ".html") && !strings.HasSuffix(strings.ToLower(r), ".htm") {
		return &py.UsageError{Msg: fmt.Sprintf("argument --report: %q: want a file name ending in .html", r)}
	}
	return nil
}

// buildScrapeTarget fills the plan's scrape fields from --server-metrics
// and --server-metrics-header: the URL without its credentials, their
// Basic Authorization, and the headers. Credentials given with the run's
// other options stay with the base URL's origin (bench/endpoint sees to
// it); these are what the scrape may carry wherever it goes.
func (c *draft) buildScrapeTarget() error {
	if c.ServerMetrics == "" {
		if len(c.ServerMetricsHeader) > 0 {
			return py.UsageErrorf("argument --server-metrics-header: it needs --server-metrics, the scrape it sends headers to")
		}
		return nil
	}
	url, auth, err := splitURLCredentials("--server-metrics", c.ServerMetricsTarget())
	if err != nil {
		return &py.UsageError{Msg: err.Error()}
	}
	if c.ServerMetrics == plan.DefaultServerMetricsURL {
		// <base-url>/metrics: --base-url's credentials are already gone
		// from BaseURL, and the base origin's own go with the scrape.
		auth = ""
	}
	c.ScrapeURL, c.ScrapeAuthorization = url, auth
	for _, item := range c.ServerMetricsHeader {
		key, value, ok, err := headerPair("--server-metrics-header", item)
		if !ok {
			return py.UsageErrorf("argument --server-metrics-header: a header has no '='; write KEY=VALUE")
		}
		if err != nil {
			return err
		}
		if auth != "" && strings.EqualFold(key, "Authorization") {
			return py.UsageErrorf("argument --server-metrics-header: %s=... beside the user:password@ of --server-metrics' URL; keep one of the two", key)
		}
		c.ScrapeHeaders = setHeader(c.ScrapeHeaders, key, value)
	}
	return nil
}
