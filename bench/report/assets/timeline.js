"use strict";
(function () {
  const data = JSON.parse(document.getElementById("timeline-data").textContent);
  const reqs = data.requests;
  const canvas = document.getElementById("canvas");
  const tip = document.getElementById("tip");
  const ctx = canvas.getContext("2d");
  const margin = { left: 78, right: 12, top: 8, bottom: 40 };

  let endUs = 1;
  for (const r of reqs) {
    const n = r.events_us.length;
    r.endUs = r.start_us + Math.max(n ? r.events_us[n - 1] : 0, r.latency_us);
    endUs = Math.max(endUs, r.endUs);
  }
  // With data.lanes (the report's timeline) a row is a concurrency slot
  // holding the requests packed into it; else a row is one request.
  const lanes = data.lanes || 0;
  const rows = lanes || reqs.length;
  function rowOf(i) { return lanes ? (reqs[i].lane || 0) : i; }
  const byRow = [];
  for (let i = 0; i < reqs.length; i++) {
    const row = rowOf(i);
    (byRow[row] = byRow[row] || []).push(reqs[i]);
  }
  const full = { x0: 0, x1: endUs * 1.02, y0: 0, y1: Math.max(rows, 1) };
  let view = Object.assign({}, full);

  const legend = document.getElementById("legend");
  data.labels.forEach(function (label, i) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = data.colors[i];
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(label));
    legend.appendChild(item);
  });

  function pad2(n) { return String(n).padStart(2, "0"); }

  // tostr of vLLM's plot: seconds from the first start as HH:MM:SS.mmm.
  function clock(us) {
    const sec = us / 1e6;
    const h = Math.floor(sec / 3600);
    const m = Math.floor((sec % 3600) / 60);
    return pad2(h) + ":" + pad2(m) + ":" + (sec % 60).toFixed(3).padStart(6, "0");
  }

  function plotArea() {
    const w = canvas.clientWidth, h = canvas.clientHeight;
    const pw = Math.max(w - margin.left - margin.right, 1), ph = Math.max(h - margin.top - margin.bottom, 1);
    return { w: w, h: h, pw: pw, ph: ph, sx: pw / (view.x1 - view.x0), sy: ph / (view.y1 - view.y0) };
  }

  function niceStep(span, ticks) {
    const raw = span / ticks, pow = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const f of [1, 2, 5, 10]) {
      if (f * pow >= raw) return f * pow;
    }
    return 10 * pow;
  }

  function draw() {
    const a = plotArea();
    const xOf = function (us) { return margin.left + (us - view.x0) * a.sx; };
    ctx.clearRect(0, 0, a.w, a.h);
    ctx.save();
    ctx.beginPath();
    ctx.rect(margin.left, margin.top, a.pw, a.ph);
    ctx.clip();
    const paths = data.colors.map(function () { return new Path2D(); });
    const first = Math.max(0, Math.floor(view.y0)), last = Math.min(rows, Math.ceil(view.y1));
    const bar = a.sy >= 3 ? a.sy * 0.8 : Math.max(a.sy, 0.6);
    const left = margin.left, right = margin.left + a.pw;
    for (let row = first; row < last; row++) {
      for (const r of byRow[row] || []) {
        const y = margin.top + (row - view.y0) * a.sy + (a.sy - bar) / 2;
        let from = xOf(r.start_us);
        let pixel = -1, pixelCls = -1; // the column the last rectangle ended in, and its class
        for (let k = 0; k < r.events_us.length; k++) {
          const to = xOf(r.start_us + r.events_us[k]);
          const cls = k === 0 ? 0 : r.classes.charCodeAt(k - 1) - 48;
          const column = Math.floor(to);
          if (to >= left && from <= right && !(to - from < 1 && column === pixel && cls <= pixelCls)) {
            paths[cls].rect(from, y, Math.max(to - from, 0.5), bar);
            if (column !== pixel || cls > pixelCls) {
              pixel = column;
              pixelCls = cls;
            }
          }
          from = to;
          if (from > right) break;
        }
      }
    }
    paths.forEach(function (p, i) { ctx.fillStyle = data.colors[i]; ctx.fill(p); });
    ctx.restore();
    drawAxes(a, xOf);
  }

  function drawAxes(a, xOf) {
    ctx.strokeStyle = "#999";
    ctx.fillStyle = "#333";
    ctx.font = "11px system-ui, sans-serif";
    ctx.strokeRect(margin.left + 0.5, margin.top + 0.5, a.pw, a.ph);
    const step = niceStep(view.x1 - view.x0, Math.max(2, Math.floor(a.pw / 110)));
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (let t = Math.ceil(view.x0 / step) * step; t <= view.x1; t += step) {
      const x = xOf(t);
      ctx.beginPath();
      ctx.moveTo(x, margin.top + a.ph);
      ctx.lineTo(x, margin.top + a.ph + 4);
      ctx.stroke();
      ctx.fillText(clock(t), x, margin.top + a.ph + 6);
    }
    ctx.fillText("Time", margin.left + a.pw / 2, a.h - 14);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const every = Math.max(1, Math.ceil(14 / a.sy));
    const first = Math.max(0, Math.floor(view.y0));
    for (let i = Math.ceil(first / every) * every; i < Math.min(rows, view.y1); i += every) {
      const y = margin.top + (i + 0.5 - view.y0) * a.sy;
      if (y >= margin.top && y <= margin.top + a.ph) ctx.fillText(lanes ? String(i + 1) : reqs[i].id, margin.left - 6, y);
    }
    ctx.save();
    ctx.translate(12, margin.top + a.ph / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(lanes ? "Concurrency slot" : "Request ID", 0, 0);
    ctx.restore();
  }

  // segmentAt finds the segment under canvas point (x, y): the request
  // row and the index of the event that ends the segment.
  function segmentAt(x, y) {
    const a = plotArea();
    if (x < margin.left || x > margin.left + a.pw || y < margin.top || y > margin.top + a.ph) return null;
    const i = Math.floor(view.y0 + (y - margin.top) / a.sy);
    if (i < 0 || i >= rows) return null;
    const at = view.x0 + (x - margin.left) / a.sx;
    const r = (byRow[i] || []).find(function (q) {
      return q.events_us.length && at >= q.start_us && at <= q.start_us + q.events_us[q.events_us.length - 1];
    });
    if (!r) return null;
    const ev = r.events_us, t = at - r.start_us;
    let lo = 0, hi = ev.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ev[mid] < t) lo = mid + 1; else hi = mid;
    }
    return { r: r, k: lo };
  }

  function describe(s) {
    const r = s.r, k = s.k;
    const from = r.start_us + (k === 0 ? 0 : r.events_us[k - 1]), to = r.start_us + r.events_us[k];
    const label = data.labels[k === 0 ? 0 : r.classes.charCodeAt(k - 1) - 48];
    const lines = [
      r.id, "Type: " + label, "Start: " + clock(from), "End: " + clock(to),
      "Duration: " + ((to - from) / 1e6).toFixed(3) + "s",
      "Prompt Tokens: " + r.prompt_tokens, "Output Tokens: " + r.output_tokens,
      "Request Start Time: " + clock(r.start_us), "Request End Time: " + clock(r.start_us + r.latency_us),
    ];
    if (r.error) lines.push("Error: " + r.error.split("\n").pop());
    return lines.join("\n");
  }

  let drag = null;
  canvas.addEventListener("mousedown", function (e) {
    drag = { x: e.offsetX, y: e.offsetY, view: Object.assign({}, view) };
  });
  window.addEventListener("mouseup", function () { drag = null; });
  canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  canvas.addEventListener("mousemove", function (e) {
    if (drag) {
      const a = plotArea();
      const dx = (e.offsetX - drag.x) / a.sx, dy = (e.offsetY - drag.y) / a.sy;
      view = { x0: drag.view.x0 - dx, x1: drag.view.x1 - dx, y0: drag.view.y0 - dy, y1: drag.view.y1 - dy };
      tip.style.display = "none";
      draw();
      return;
    }
    const s = segmentAt(e.offsetX, e.offsetY);
    if (!s) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = describe(s);
    tip.style.display = "block";
    const room = canvas.clientWidth - tip.offsetWidth - 4;
    tip.style.left = Math.max(0, Math.min(e.offsetX + 14, room)) + "px";
    tip.style.top = (e.offsetY + 14) + "px";
  });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    const a = plotArea();
    const f = e.deltaY < 0 ? 0.8 : 1.25;
    if (e.shiftKey) {
      const at = view.y0 + (e.offsetY - margin.top) / a.sy;
      view.y0 = at - (at - view.y0) * f;
      view.y1 = at + (view.y1 - at) * f;
    } else {
      const at = view.x0 + (e.offsetX - margin.left) / a.sx;
      view.x0 = at - (at - view.x0) * f;
      view.x1 = at + (view.x1 - at) * f;
    }
    draw();
  }, { passive: false });
  canvas.addEventListener("dblclick", function () {
    view = Object.assign({}, full);
    draw();
  });

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    // The report's lanes sit in a box of at most 640 px, the time axis at
    // its foot; zoom (Shift+wheel) shows more of them.
    const cap = lanes ? 640 : Math.max(window.innerHeight - 120, 260);
    const h = Math.min(Math.max(rows * 18 + margin.top + margin.bottom, 260), cap);
    canvas.style.height = h + "px";
    canvas.width = Math.round(canvas.clientWidth * dpr);
    canvas.height = Math.round(h * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    draw();
  }
  window.addEventListener("resize", resize);
  resize();
})();
