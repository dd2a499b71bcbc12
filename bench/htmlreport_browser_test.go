package bench

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumPath finds a headless browser. Without one the browser tests
// skip, unless STAMPEDE_REQUIRE_CHROMIUM is set (CI sets it), when they
// fail.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("STAMPEDE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("STAMPEDE_REQUIRE_CHROMIUM is set but no chromium is installed (apt-get install -y chromium)")
	}
	t.Skip("no chromium: apt-get install -y chromium to run the browser tests")
	return ""
}

// headless runs the browser on a page with extra arguments; it returns
// stdout and stderr.
func headless(t *testing.T, browser, page string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}, args...)
	all = append(all, "file://"+page)
	cmd := exec.CommandContext(ctx, browser, all...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestReportInBrowser opens the report of a mock run with server metrics
// in headless Chromium: the page loads no resource, raises no error, and
// every chart (each SVG and the timeline's canvas) has drawn marks; a
// screenshot of it is a real picture.
func TestReportInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	dir, _ := reportMockRun(t)
	page := filepath.Join(dir, "r.html")

	dom, logs := headless(t, browser, page, "--dump-dom")
	if !strings.Contains(dom, "data-report-ready=") {
		t.Fatalf("the page's load handler never ran:\n%.2000s", dom)
	}
	if m := regexp.MustCompile(`data-report-errors="([^"]*)"`).FindStringSubmatch(dom); m != nil {
		t.Errorf("script errors on the page: %s", m[1])
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "CONSOLE") && (strings.Contains(line, "Uncaught") || strings.Contains(line, "Error")) {
			t.Errorf("console: %s", line)
		}
	}
	if !strings.Contains(dom, `data-resources="0"`) {
		t.Errorf("the page loaded resources: %s", regexp.MustCompile(`data-resources="[^"]*"`).FindString(dom))
	}
	figs := regexp.MustCompile(`<figure class="chart" id="([^"]*)" data-marks="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(figs) < 10 {
		t.Errorf("%d charts drawn, want the distributions, over-time and server charts", len(figs))
	}
	for _, f := range figs {
		if n, _ := strconv.Atoi(f[2]); n == 0 {
			t.Errorf("chart %s drew no marks", f[1])
		}
	}
	canvas := regexp.MustCompile(`<canvas id="canvas"[^>]*data-marks="(\d+)"`).FindStringSubmatch(dom)
	if canvas == nil {
		t.Error("the timeline canvas was not checked")
	} else if n, _ := strconv.Atoi(canvas[1]); n == 0 {
		t.Error("the timeline drew no segment")
	}

	shot := filepath.Join(dir, "shot.png")
	headless(t, browser, page, "--window-size=1280,1600", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				inked++
			}
		}
	}
	if total := (b.Dx() / 4) * (b.Dy() / 4); inked*100 < total {
		t.Errorf("screenshot is nearly blank: %d of %d sampled pixels inked", inked, total)
	}
}
