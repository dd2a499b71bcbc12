// Package progress draws the run's progress bar on stderr, in the format
// of the tqdm bar Python's benchmark shows.
package progress

import (
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-bench/stampede/internal/py"
)

// Bar is a progress bar in tqdm's default format, the one Python's
// benchmark shows on stderr:
//
//	42%|████▏     | 420/1000 [00:05<00:06, 84.10it/s]
//
// The count is set from outside (typically by polling the shards'
// completion counters, see Poll); each redraw rewrites the line after a
// carriage return, and Close draws the final state and ends the line.
// Methods must not be called concurrently, except through Poll's stop.
type Bar struct {
	w        io.Writer
	total    int
	disabled bool
	now      func() time.Time
	ncols    int // terminal width; 0 draws tqdm's fixed 10-cell bar

	start, lastDraw time.Time
	n, lastDrawN    int
	lastLen         int
	emaDn, emaDt    ema
	closed          bool
}

// Redraw no more often than tqdm's default mininterval.
const progressMinInterval = 100 * time.Millisecond

// New starts a bar for total items on w (drawing "0%" at once);
// with disabled (--disable-tqdm) it draws nothing. When w is a terminal
// the bar fills its width, as tqdm's does; otherwise it has 10 cells.
func New(w io.Writer, total int, disabled bool) *Bar {
	p := &Bar{w: w, total: total, disabled: disabled, now: time.Now, ncols: terminalColumns(w)}
	p.start = p.now()
	p.lastDraw = p.start
	p.draw(p.start)
	return p
}

// Set records that n items are done and redraws the bar if n changed and
// at least 100 ms passed since the last redraw.
func (p *Bar) Set(n int) {
	if p.closed || n == p.n {
		return
	}
	p.n = n
	if t := p.now(); t.Sub(p.lastDraw) >= progressMinInterval {
		p.sample(t)
		p.draw(t)
	}
}

// Close draws the final state and ends the line; later calls do nothing.
func (p *Bar) Close() {
	if p.closed {
		return
	}
	t := p.now()
	p.sample(t)
	p.draw(t)
	p.closed = true
	if !p.disabled {
		io.WriteString(p.w, "\n")
	}
}

// Poll calls Set(count()) every interval on its own goroutine until the
// returned stop is called; stop then sets the final count and closes the
// bar. count must be safe to call from that goroutine (e.g. atomic loads).
func (p *Bar) Poll(count func() int, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				p.Set(count())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			p.n = count()
			p.Close()
		})
	}
}

// sample feeds the progress since the last redraw into the smoothed rate,
// as tqdm does on each redraw (exponential moving average, smoothing 0.3).
func (p *Bar) sample(t time.Time) {
	dn, dt := p.n-p.lastDrawN, t.Sub(p.lastDraw).Seconds()
	if dn > 0 && dt > 0 {
		p.emaDn.add(float64(dn))
		p.emaDt.add(dt)
	}
	p.lastDrawN, p.lastDraw = p.n, t
}

func (p *Bar) draw(t time.Time) {
	if p.disabled {
		return
	}
	var rate float64
	if dt := p.emaDt.value(); dt > 0 {
		rate = p.emaDn.value() / dt
	}
	line := formatMeter(p.n, p.total, t.Sub(p.start).Seconds(), rate, p.ncols)
	pad := max(p.lastLen-len([]rune(line)), 0)
	p.lastLen = len([]rune(line))
	io.WriteString(p.w, "\r"+line+strings.Repeat(" ", pad))
}

// ema is tqdm's EMA: a bias-corrected exponential moving average with
// smoothing factor 0.3.
type ema struct {
	last  float64
	calls int
}

const emaAlpha = 0.3

func (e *ema) add(x float64) {
	e.last = emaAlpha*x + (1-emaAlpha)*e.last
	e.calls++
}

func (e *ema) value() float64 {
	if e.calls == 0 {
		return 0
	}
	return e.last / (1 - pow(1-emaAlpha, e.calls))
}

func pow(x float64, n int) float64 {
	r := 1.0
	for ; n > 0; n-- {
		r *= x
	}
	return r
}

// formatMeter is tqdm.format_meter for a bar with a known total and the
// default unit "it": "{pct:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining},
// {rate}]", the rate as "{:5.2f}it/s", or "{:5.2f}s/it" when slower than
// one item a second, "?" while unknown (rate 0). ncols 0 gives the 10-cell
// bar tqdm draws when the width is unknown.
func formatMeter(n, total int, elapsedS, rate float64, ncols int) string {
	rateFmt, remaining := "?it/s", "?"
	if rate > 0 {
		if inv := 1 / rate; inv > 1 {
			rateFmt = pyRightFixed2(inv, 5) + "s/it"
		} else {
			rateFmt = pyRightFixed2(rate, 5) + "it/s"
		}
		remaining = formatInterval(float64(total-n) / rate)
	}
	frac := 0.0
	if total > 0 {
		frac = float64(n) / float64(total)
	}
	pct := strconv.FormatFloat(frac*100, 'f', 0, 64)
	lBar := strings.Repeat(" ", max(3-len(pct), 0)) + pct + "%|"
	rBar := "| " + strconv.Itoa(n) + "/" + strconv.Itoa(total) +
		" [" + formatInterval(elapsedS) + "<" + remaining + ", " + rateFmt + "]"
	width := 10
	if ncols > 0 {
		width = max(1, ncols-len([]rune(lBar))-len([]rune(rBar)))
	}
	return lBar + progressBar(frac, width) + rBar
}

// progressBar is tqdm's Bar with its Unicode charset: full blocks, one
// eighth-step partial block, spaces.
func progressBar(frac float64, width int) string {
	const charset = " ▏▎▍▌▋▊▉█"
	syms := []rune(charset)
	nsyms := len(syms) - 1
	eighths := int(frac * float64(width) * float64(nsyms))
	full, part := eighths/nsyms, eighths%nsyms
	if full >= width {
		return strings.Repeat(string(syms[nsyms]), width)
	}
	return strings.Repeat(string(syms[nsyms]), full) + string(syms[part]) +
		strings.Repeat(" ", width-full-1)
}

// formatInterval is tqdm.format_interval: [H:]MM:SS of the whole seconds.
func formatInterval(s float64) string {
	secs := int(s)
	m, sec := secs/60, secs%60
	h, m := m/60, m%60
	two := func(v int) string {
		if v < 10 {
			return "0" + strconv.Itoa(v)
		}
		return strconv.Itoa(v)
	}
	if h > 0 {
		return strconv.Itoa(h) + ":" + two(m) + ":" + two(sec)
	}
	return two(m) + ":" + two(sec)
}

// pyRightFixed2 is "{:N.2f}": two decimals, right-aligned in width.
func pyRightFixed2(f float64, width int) string {
	s := py.Fixed(f, 2)
	return strings.Repeat(" ", max(width-len(s), 0)) + s
}

// terminalColumns returns w's terminal width, as tqdm reads it from the
// stream, or $COLUMNS; 0 when neither is known.
func terminalColumns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
		if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
			return c
		}
	}
	return 0
}
