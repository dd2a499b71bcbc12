// Runs the script of a --plot-timeline page against a stand-in DOM and
// prints, as JSON, how many segments each colour filled on the first draw
// and the hover text of the middle of the first request's TTFT segment.
// Usage: node harness.js page.html
"use strict";
const fs = require("fs");
const vm = require("vm");

const page = fs.readFileSync(process.argv[2], "utf8");
const data = page.match(/<script id="timeline-data" type="application\/json">([\s\S]*?)<\/script>/)[1];
const script = page.match(/<script>\n([\s\S]*?)<\/script>/)[1];

const fills = {};
class Path2D {
  constructor() { this.rects = 0; }
  rect() { this.rects++; }
}
const noop = () => {};
const ctx = {
  fillStyle: "", strokeStyle: "", font: "", textAlign: "", textBaseline: "",
  clearRect: noop, save: noop, restore: noop, beginPath: noop, rect: noop, clip: noop,
  moveTo: noop, lineTo: noop, stroke: noop, strokeRect: noop, fillText: noop,
  translate: noop, rotate: noop, setTransform: noop,
  fill(path) { fills[this.fillStyle] = (fills[this.fillStyle] || 0) + path.rects; },
};
const handlers = {};
const canvas = {
  style: {}, width: 0, height: 0, clientWidth: 1000,
  get clientHeight() { return parseFloat(this.style.height) || 300; },
  getContext() { return ctx; },
  addEventListener(type, fn) { handlers[type] = fn; },
};
const element = () => ({ style: {}, textContent: "", offsetWidth: 120, appendChild: noop });
const nodes = {
  "timeline-data": { textContent: data },
  canvas: canvas,
  tip: element(),
  legend: element(),
};
const sandbox = {
  document: {
    getElementById: (id) => nodes[id],
    createElement: element,
    createTextNode: (text) => ({ text }),
  },
  window: { devicePixelRatio: 1, innerHeight: 900, addEventListener: noop },
  Path2D,
};
vm.runInNewContext(script, sandbox);
const drawn = Object.assign({}, fills);

// The page's geometry: margins 78/12/8/40 and the full view.
const parsed = JSON.parse(data);
const reqs = parsed.requests;
let end = 1;
for (const r of reqs) {
  const n = r.events_us.length;
  end = Math.max(end, r.start_us + Math.max(n ? r.events_us[n - 1] : 0, r.latency_us));
}
const i = reqs.findIndex((r) => r.events_us.length > 0);
const r = reqs[i];
const pw = canvas.clientWidth - 78 - 12, ph = canvas.clientHeight - 8 - 40;
const x = 78 + ((r.start_us + r.events_us[0] / 2) / (end * 1.02)) * pw;
const y = 8 + ((i + 0.5) * ph) / reqs.length;
handlers.mousemove({ offsetX: x, offsetY: y });

process.stdout.write(JSON.stringify({ fills: drawn, tip: nodes.tip.textContent }));
