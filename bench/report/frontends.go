package report

// SidecarFrontEnd is one --server-urls front end's share of the run: the
// requests sent to it (request i to front end i mod their count), with the
// headline figures computed over them alone by Python's formulas and over
// the whole run's duration, so that a slow replica shows beside the
// others. The console block stays the whole run's.
type SidecarFrontEnd struct {
	// URL is the front end's URL with --endpoint.
	URL string `json:"url"`
	PointMetrics
}
