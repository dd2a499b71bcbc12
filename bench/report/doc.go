// Package report writes stampede's own outputs of a run, beside Python's
// (package bench/pyout) and never inside them: the sidecar
// <result>.stampede.json and the data types it holds, the blocks behind
// stampede's own flags (--breakdown, --steady-state, --warmup-time,
// --per-token-itl, --reasoning-metrics, the server-vs-client table), the
// health line on stderr, the --plot-timeline page, the HTML report
// (--report and `stampede report`), the --plot-dataset-stats figure, and a
// sweep's summary files. It reads what a run measured (engine, metrics)
// and never runs anything: package bench computes and calls it.
//
// The pages are html/template files in assets/ (pages.go embeds them):
// the Go side lays a page out as plain values (htmlreport_page.go, the
// charts in htmlreport_svg.go, the sweeps in htmlreport_sweep.go) and the
// templates write the markup. Python's figures (labels, JSON keys) are
// read from package pyout's table, never spelled here.
package report
