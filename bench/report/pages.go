package report

import (
	"embed"
	"html/template"
	"strconv"
)

// The HTML pages (the --plot-timeline page and the report) are
// html/template files with their style and scripts beside them in
// assets/, embedded in the binary and inlined into every page, so a page
// is one self-contained file that fetches nothing when it is opened.
// html/template escapes every string the run brings (titles, run names,
// server URLs and errors, metric names) for the context it lands in; the
// timeline's data goes in as JSON whose encoder escapes <, > and &, so no
// string can close its <script> element.
//
// The timeline script (timeline.js) reads the JSON of buildTimeline from
// the element #timeline-data and draws it on a canvas: rows top to bottom
// in request order, segments coloured by their label's index (0 TTFT, 1–3
// the ITL classes). The wheel zooms time about the pointer, Shift+wheel
// zooms the rows, dragging pans, a double click shows everything again,
// and hovering a segment shows vLLM's hover text. Segments of one colour
// are filled as one path per frame, and on each row a segment narrower
// than a pixel is skipped when the pixel already holds one of its class or
// a worse one, so a zoomed-out view of a long run draws at most a few
// rectangles per pixel column and row, and the worst ITL class in a pixel
// is the one that shows.

//go:embed assets
var assets embed.FS

// pages holds the page templates of assets/, each named by its file name
// ("timeline.html").
var pages = template.Must(template.New("").Funcs(pageFuncs).ParseFS(assets, "assets/*.html"))

// pageFuncs are the helpers the templates call. The style sheets and
// scripts are inlined by {{style NAME}} and {{script NAME}} as they are
// in assets/: parsed as templates, their comments would be stripped.
var pageFuncs = template.FuncMap{
	"style":  func(name string) template.CSS { return template.CSS(asset(name)) },
	"script": func(name string) template.JS { return template.JS(asset(name)) },
	// f1 is a coordinate to one decimal, as "%.1f" writes it.
	"f1": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}

// asset is the text of assets/name, which the build embedded.
func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic("report: no asset " + name)
	}
	return string(b)
}
