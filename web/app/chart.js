// chart.js - the console's time-series charts: lines and a stepped band on one canvas, a time
// axis (hour, day or week), a value axis from 0, a legend that reads out the values at the
// pointer.  Small on purpose (docs/console.md, "Charts"): a fresh page compiles it in a few
// milliseconds, where a general chart library costs a quarter of a second of the browser's CPU.
//
// The pure parts (tick choice, decimation to the canvas's pixel columns) are exported for the
// unit tests (web/test/chart.test.mjs); nothing here touches the DOM outside the Chart class.

// Space around the plot for the axes' labels (CSS pixels).
export const PAD = { top: 8, right: 12, bottom: 20, left: 42 };

// Time ticks, in seconds: the first that leaves `space` pixels between labels is used.
const TIME_STEPS = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 259200, 604800];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const two = (n) => String(n).padStart(2, '0');

// Seconds to add to a UTC time to get the local wall clock at t.
function tzOffset(t) {
  return -new Date(t * 1000).getTimezoneOffset() * 60;
}

// A tick's label: "14:30" within a day, "Thu 26" at a local midnight or when ticks are days.
export function timeLabel(t, step) {
  const d = new Date(t * 1000);
  if (step >= 86400 || (d.getHours() === 0 && d.getMinutes() === 0)) return `${DAYS[d.getDay()]} ${d.getDate()}`;
  return `${two(d.getHours())}:${two(d.getMinutes())}`;
}

// The pointer's read-out of a time: "Thu 26 14:30".
export function timeText(t) {
  const d = new Date(t * 1000);
  return `${DAYS[d.getDay()]} ${d.getDate()} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

// Ticks of the time axis from t0 to t1 (seconds) over `width` pixels: [{t, label}], on round
// local times (whole minutes, hours, local midnights), at least `space` pixels apart.
export function timeTicks(t0, t1, width, space = 60) {
  if (!(t1 > t0) || !(width > 0)) return [];
  const perPx = (t1 - t0) / width;
  const step = TIME_STEPS.find((s) => s / perPx >= space) || TIME_STEPS[TIME_STEPS.length - 1];
  const off = tzOffset(t0);
  // A range longer than the largest step allows: every k-th step, so labels stay apart.
  const every = step * Math.max(1, Math.ceil((space * perPx) / step));
  const out = [];
  for (let t = Math.ceil((t0 + off) / step) * step - off; t <= t1; t += every) out.push({ t, label: timeLabel(t, step) });
  return out;
}

// Ticks of the value axis from 0 to max over `height` pixels: 1, 2, 2.5 or 5 times a power of
// ten, at least `space` pixels apart; max itself when it is a multiple of the step.
export function valueTicks(max, height, space = 24) {
  if (!(max > 0) || !(height > 0)) return [0];
  const want = (max * space) / height; // the smallest step that keeps the labels apart
  let p = 10 ** Math.floor(Math.log10(want));
  let step = null;
  while (step === null) {
    step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= want - 1e-9) ?? null;
    p *= 10;
  }
  const out = [];
  for (let i = 0; i * step <= max + 1e-9; i++) out.push(Number((i * step).toPrecision(12)));
  return out;
}

// A line series reduced to what `cols` pixel columns can show: per column the first, the
// lowest, the highest and the last point, in their order (so peaks and the shape survive);
// a null value is a gap.  xs ascending; x0..x1 map to columns 0..cols.  Returns polylines,
// each a flat array [px, value, px, value, ...] with px in columns (fractional).
export function decimate(xs, ys, x0, x1, cols) {
  const lines = [];
  const scale = cols / (x1 - x0);
  let line = null, col = NaN, open = false;
  // The current column's first, lowest, highest and last points (index, px, value); scalars,
  // not objects: this runs for every point of every series at each draw.
  let fi = 0, fx = 0, fv = 0, li = 0, lx = 0, lv = 0;
  let ni = 0, nx = 0, nv = 0, xi = 0, xx = 0, xv = 0;
  const flush = () => {
    if (!open) return;
    line.push(fx, fv);
    const lo = ni !== fi && ni !== li, hi = xi !== fi && xi !== li;
    if (lo && hi && ni > xi) line.push(xx, xv, nx, nv);
    else {
      if (lo) line.push(nx, nv);
      if (hi) line.push(xx, xv);
    }
    if (li !== fi) line.push(lx, lv);
    open = false;
  };
  for (let i = 0; i < xs.length; i++) {
    const v = ys[i];
    if (v === null || v === undefined || !Number.isFinite(v)) { flush(); line = null; continue; }
    const px = (xs[i] - x0) * scale;
    const c = Math.floor(px);
    if (open && c === col) {
      if (v < nv) { ni = i; nx = px; nv = v; }
      if (v > xv) { xi = i; xx = px; xv = v; }
      li = i; lx = px; lv = v;
      continue;
    }
    flush();
    if (!line) { line = []; lines.push(line); }
    col = c;
    open = true;
    fi = li = ni = xi = i;
    fx = lx = nx = xx = px;
    fv = lv = nv = xv = v;
  }
  flush();
  return lines;
}

// A stepped band (each value holds from its time for `step` seconds, or to the next point)
// reduced to pixel columns: per column the highest value over it, NaN where none.
export function bandColumns(xs, ys, x0, x1, cols, step) {
  const out = new Float64Array(cols).fill(NaN);
  const scale = cols / (x1 - x0);
  for (let i = 0; i < xs.length; i++) {
    const v = ys[i];
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    const end = Math.min(xs[i] + step, i + 1 < xs.length ? xs[i + 1] : Infinity, x1);
    const a = Math.max(0, Math.floor((xs[i] - x0) * scale));
    const b = Math.min(cols, Math.max(a + 1, Math.ceil((end - x0) * scale)));
    for (let c = a; c < b; c++) if (!(out[c] >= v)) out[c] = v;
  }
  return out;
}

// Series on one time axis (the queue and user charts): x, the union of their times ascending;
// per series its `key` column at those times divided by `div`, NaN where the series has no
// point (a gap).  Each series' t is ascending (GET /v1/history): a merge, no per-point object.
export function unionColumns(series, key, div = 1) {
  let all = new Float64Array(series.reduce((n, x) => n + x.t.length, 0));
  let k = 0;
  for (const x of series) for (const t of x.t) all[k++] = t;
  all.sort();
  let n = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[n++] = all[i];
  all = all.subarray(0, n);
  const ys = series.map((x) => {
    const col = new Float64Array(n).fill(NaN);
    for (let i = 0, j = 0; i < x.t.length; i++) {
      while (all[j] < x.t[i]) j++;
      const v = x[key][i];
      if (v !== null) col[j] = v / div;
    }
    return col;
  });
  return { x: all, ys };
}

// The index of the point nearest to x in ascending xs (-1 when empty).
export function nearest(xs, x) {
  if (!xs.length) return -1;
  let lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) {
    const m = (lo + hi) >> 1;
    if (xs[m] <= x) lo = m; else hi = m;
  }
  return Math.abs(xs[hi] - x) < Math.abs(x - xs[lo]) ? hi : lo;
}

// Charts' plot boxes ([{x, y, w, h}], CSS pixels in their host) grouped into bands, boxes that
// overlap vertically (a row of a grid) in one band: [{x0, y0, w, hgt, places}], the band's box on
// whole CSS pixels spanning its charts, and per chart its index i and its place in the band (x, y
// on whole device pixels at pixel ratio dpr, so that grid lines fall on pixel centres; w, h).
export function bands(boxes, dpr = 1) {
  const order = boxes.map((b, i) => ({ ...b, i })).sort((p, q) => p.y - q.y);
  const groups = [];
  for (const b of order) {
    const last = groups[groups.length - 1];
    if (last && b.y < last.y1) { last.boxes.push(b); last.y1 = Math.max(last.y1, b.y + b.h); } else groups.push({ boxes: [b], y1: b.y + b.h });
  }
  const px = (v) => Math.round(v * dpr) / dpr;
  return groups.map(({ boxes: bs }) => {
    const x0 = Math.floor(Math.min(...bs.map((b) => b.x))), y0 = Math.floor(Math.min(...bs.map((b) => b.y)));
    const w = Math.ceil(Math.max(...bs.map((b) => b.x + b.w))) - x0, hgt = Math.ceil(Math.max(...bs.map((b) => b.y + b.h))) - y0;
    return { x0, y0, w, hgt, places: bs.map((b) => ({ i: b.i, x: px(b.x - x0), y: px(b.y - y0), w: b.w, h: b.h })) };
  });
}

// Canvases that several charts draw into, each chart in its own rectangle: one canvas per band
// of charts side by side (charts whose plot boxes overlap vertically: a row of the GPU grid), so
// one canvas resource, composited layer, 2D context and font set-up per row, where a canvas per
// chart cost the browser each of these per chart (docs/console.md, "Usage history: figures");
// a band's canvas spans its charts and little else (a canvas over the whole grid cost more in
// pixels than it saved).  The canvases lie over `host` (absolutely placed, under no pointer:
// each chart's plot box takes the pointer, and its cursor line is drawn above them); each chart
// is drawn where its plot box is.  The sheet follows the host's size (ResizeObserver), what
// changes inside it (MutationObserver: a card's content above a chart moves the chart) and the
// screen's pixel ratio: it measures its charts again before the next frame is painted and
// redraws them when a box moved or changed size.
export class Sheet {
  constructor(host) {
    this.host = host;
    this.charts = [];
    this.bands = [];      // [{canvas, g}]
    this.geometry = '';   // the measured places, as a key: unchanged places need no redraw
    this.dirty = true;    // places to be measured before the next draw
    this.held = 0;        // batch(): charts drawn once at its end
    this.changed = false; // a chart added or given data during a batch: draw at its end
    this.raf = 0;
    host.classList.add('sheet-host');
    const later = () => this.invalidate();
    this.ro = new ResizeObserver(later);
    this.ro.observe(host);
    this.mo = new MutationObserver(later);
    this.mo.observe(host, { childList: true, subtree: true, characterData: true });
    this.watchRatio();
  }

  // Redraw when the pixel ratio changes (zoom, another screen): a new query each time.
  watchRatio() {
    this.ratio = matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    this.onRatio = () => { if (!this.gone) { this.watchRatio(); this.layout(true); } };
    this.ratio.addEventListener('change', this.onRatio, { once: true });
  }

  // Make or change several charts and draw them all once, at the end.
  batch(fn) {
    Sheet.batch([this], fn);
  }

  // The same over several sheets: at the end every sheet's charts are measured first (one
  // style and layout for all, as nothing is written between the reads), then each sheet whose
  // charts changed (or moved) draws them.
  static batch(sheets, fn) {
    for (const s of sheets) s.held++;
    try { fn(); } finally {
      const ready = sheets.filter((s) => --s.held === 0 && !s.gone);
      const places = ready.map((s) => s.measure());
      ready.forEach((s, i) => { const force = s.changed; s.changed = false; s.place(places[i], force); });
    }
  }

  // Something inside the host may have moved: measure again before the next frame.
  invalidate() {
    this.dirty = true;
    if (!this.raf && !this.gone) this.raf = requestAnimationFrame(() => { this.raf = 0; if (this.dirty) this.layout(false); });
  }

  add(chart) {
    this.charts.push(chart);
    this.dirty = true;
    this.changed = true;
  }

  remove(chart) {
    this.charts = this.charts.filter((c) => c !== chart);
    if (chart.at && chart.band?.g) chart.band.g.clearRect(chart.at.x, chart.at.y, chart.at.w, chart.at.h);
    this.invalidate();
  }

  destroy() {
    this.gone = true;
    cancelAnimationFrame(this.raf);
    this.ro.disconnect();
    this.mo.disconnect();
    this.ratio.removeEventListener('change', this.onRatio);
    for (const b of this.bands) b.canvas.remove();
    this.bands = [];
  }

  // Measure every chart's plot box (one layout for all), group them into bands, size and place
  // a canvas over each band, and draw every chart when anything moved (or always: force).
  layout(force) {
    if (this.gone || this.held) return;
    this.place(this.measure(), force);
  }

  // Where the charts are: their bands and places, read from the layout (reads only).
  measure() {
    this.dirty = false;
    const charts = this.charts.filter((c) => c.plot.isConnected);
    const hr = this.host.getBoundingClientRect();
    const ox = hr.left + this.host.clientLeft, oy = hr.top + this.host.clientTop;
    const dpr = window.devicePixelRatio || 1;
    const frames = bands(charts.map((c) => {
      const r = c.plot.getBoundingClientRect();
      return { x: r.left - ox, y: r.top - oy, w: r.width, h: r.height };
    }), dpr);
    const key = `${dpr} ` + frames.map((f) => `${f.x0},${f.y0},${f.w},${f.hgt}:` + f.places.map((p) => `${p.i},${p.x},${p.y},${p.w},${p.h}`).join(';')).join(' ');
    return { charts, dpr, frames, key };
  }

  // Canvases over the measured bands and every chart drawn in its place, when anything moved
  // (or always: force).
  place({ charts, dpr, frames, key }, force) {
    if (!force && key === this.geometry) return;
    this.geometry = key;
    this.dpr = dpr;
    while (this.bands.length > frames.length) this.bands.pop().canvas.remove();
    frames.forEach((f, i) => {
      let band = this.bands[i];
      if (!band) {
        const canvas = document.createElement('canvas');
        canvas.className = 'sheet';
        canvas.setAttribute('aria-hidden', 'true'); // each figure's caption is its text
        band = this.bands[i] = { canvas, g: null };
      }
      if (band.canvas.parentNode !== this.host) this.host.append(band.canvas);
      // Setting the size clears the canvas: every chart of the band is drawn again below.
      band.canvas.width = Math.round(f.w * dpr);
      band.canvas.height = Math.round(f.hgt * dpr);
      Object.assign(band.canvas.style, { left: `${f.x0}px`, top: `${f.y0}px`, width: `${f.w}px`, height: `${f.hgt}px` });
      band.g = band.canvas.getContext('2d');
      band.g.setTransform(dpr, 0, 0, dpr, 0, 0);
      for (const p of f.places) {
        const c = charts[p.i];
        c.band = band;
        c.at = { x: p.x, y: p.y, w: p.w, h: p.h };
        c.width = Math.max(1, p.w);
        c.paint(band.g);
      }
    });
  }

  // One chart's data changed: draw it alone in its place, or everything when places may have
  // moved since they were measured.
  draw(chart) {
    if (this.held) { this.changed = true; return; }
    if (this.dirty || !chart.at || !chart.band) { this.layout(true); return; }
    chart.paint(chart.band.g);
  }
}

// A chart in `box` (emptied), drawn on `opts.sheet` (a Sheet shared with other charts) or, without
// one, on a sheet of its own over the box:
//   opts.height      CSS pixels (the plot box's; its width is the box's)
//   opts.yMax        the value axis's top;  opts.yLabel(v)  a tick's text
//   opts.series      [{label, colour, width, dash, band, value(v) -> text}]
//   opts.pal         {muted, grid, font}
//   opts.data        the first data (else empty, until setData)
// chart.setData({x, ys, start, end, step}): x ascending seconds, ys one array per series
// (plain or typed; null or NaN: a gap), start..end the range shown, step the points' interval.  Each draw is
// synchronous: once the constructor (outside a sheet's batch), the batch or setData returns,
// the canvas holds the data; the box's data-drawn then says how many points are drawn and
// data-drawn-width at what width (CSS pixels), for tests and tools.
export class Chart {
  constructor(box, opts) {
    this.box = box;
    this.opts = opts;
    this.height = opts.height;
    this.width = 300;
    this.data = opts.data || { x: [], ys: opts.series.map(() => []), start: 0, end: 1, step: 1 };
    this.cursor = document.createElement('div');
    this.cursor.className = 'cursor';
    this.cursor.hidden = true;
    this.plot = document.createElement('div');
    this.plot.className = 'plot';
    this.plot.style.height = `${this.height}px`;
    this.plot.append(this.cursor);
    this.time = document.createElement('span');
    this.time.className = 'lg-time';
    this.values = [];
    const legend = document.createElement('div');
    legend.className = 'legend';
    legend.append(this.time);
    for (const s of opts.series) {
      const item = document.createElement('span');
      item.className = 'lg-item';
      const mark = document.createElement('i');
      mark.className = s.band ? 'lg-band' : s.dash ? 'lg-dash' : 'lg-line';
      mark.style.color = s.colour;
      const val = document.createElement('b');
      item.append(mark, `${s.label} `, val);
      legend.append(item);
      this.values.push(val);
    }
    box.replaceChildren(this.plot, legend);
    this.own = !opts.sheet;
    this.sheet = opts.sheet || new Sheet(box);
    this.hoverAt = -1;
    this.plot.addEventListener('pointermove', (e) => this.hover(e.offsetX));
    this.plot.addEventListener('pointerleave', () => this.hover(null));
    this.sheet.add(this);
    this.sheet.draw(this);
  }

  setData(data) {
    this.data = data;
    this.sheet.draw(this);
  }

  destroy() {
    this.gone = true;
    if (this.own) this.sheet.destroy(); else this.sheet.remove(this);
    this.box.replaceChildren();
    delete this.box.dataset.drawn;
    delete this.box.dataset.drawnWidth;
  }

  // The plot's area in CSS pixels and the time -> x, value -> y maps.
  frame() {
    const { start, end } = this.data;
    const w = this.width - PAD.left - PAD.right;
    const hgt = this.height - PAD.top - PAD.bottom;
    const t0 = start, t1 = end > start ? end : start + 1;
    return {
      w, hgt, t0, t1,
      x: (t) => PAD.left + ((t - t0) * w) / (t1 - t0),
      y: (v) => PAD.top + hgt - (Math.min(v, this.opts.yMax) * hgt) / this.opts.yMax,
    };
  }

  // Draw on the sheet's context g (its transform at the screen's pixel ratio) in this chart's
  // place (this.at, CSS pixels from the canvas's corner), clipped to it.
  paint(g) {
    if (this.gone || !this.at) return;
    const { opts, data } = this;
    const dpr = this.sheet.dpr || 1;
    g.save();
    g.translate(this.at.x, this.at.y);
    g.clearRect(0, 0, this.width, this.height);
    g.beginPath();
    g.rect(0, 0, this.width, this.height);
    g.clip();
    const f = this.frame();
    const crisp = (v) => Math.round(v * dpr) / dpr + 0.5 / dpr;
    g.font = opts.pal.font;
    g.lineWidth = 1 / dpr;
    g.strokeStyle = opts.pal.grid;
    g.fillStyle = opts.pal.muted;
    // The value axis: grid lines and labels.
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    g.beginPath();
    for (const v of valueTicks(opts.yMax, f.hgt)) {
      const y = crisp(f.y(v));
      g.moveTo(PAD.left, y);
      g.lineTo(PAD.left + f.w, y);
      g.fillText(opts.yLabel(v), PAD.left - 6, y);
    }
    // The time axis, the labels kept inside the canvas.
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (const { t, label } of timeTicks(f.t0, f.t1, f.w)) {
      const x = crisp(f.x(t));
      g.moveTo(x, PAD.top);
      g.lineTo(x, PAD.top + f.hgt);
      const half = g.measureText(label).width / 2;
      g.fillText(label, Math.min(Math.max(x, half), this.width - half), PAD.top + f.hgt + 4);
    }
    g.stroke();
    // The series, clipped to the plot, at the resolution of the canvas's pixel columns.
    g.save();
    g.beginPath();
    g.rect(PAD.left, PAD.top, f.w, f.hgt);
    g.clip();
    const cols = Math.max(1, Math.round(f.w * dpr));
    const colX = (c) => PAD.left + c / dpr;
    opts.series.forEach((s, i) => {
      const ys = data.ys[i] || [];
      if (s.band) {
        const band = bandColumns(data.x, ys, f.t0, f.t1, cols, data.step);
        g.fillStyle = s.colour;
        for (let c = 0; c < cols;) {
          const v = band[c];
          let e = c + 1;
          while (e < cols && (band[e] === v || (Number.isNaN(band[e]) && Number.isNaN(v)))) e++;
          if (!Number.isNaN(v)) { const y = f.y(v); g.fillRect(colX(c), y, (e - c) / dpr, PAD.top + f.hgt - y); }
          c = e;
        }
        return;
      }
      g.strokeStyle = s.colour;
      g.lineWidth = s.width || 1.5;
      g.lineJoin = 'round';
      g.setLineDash(s.dash || []);
      g.beginPath();
      for (const line of decimate(data.x, ys, f.t0, f.t1, cols)) {
        g.moveTo(colX(line[0]), f.y(line[1]));
        // A lone point: a dot-sized stroke, so that it is seen.
        if (line.length === 2) g.lineTo(colX(line[0]) + 1, f.y(line[1]));
        for (let k = 2; k < line.length; k += 2) g.lineTo(colX(line[k]), f.y(line[k + 1]));
      }
      g.stroke();
    });
    g.restore();
    g.restore();
    this.box.dataset.drawn = String(data.x.length);
    this.box.dataset.drawnWidth = String(this.width);
    this.readOut();
  }

  // The legend's values at the point nearest the pointer (x in CSS pixels; null: the pointer
  // left), or the newest point's when the pointer is away.
  hover(px) {
    const f = this.frame();
    const { x } = this.data;
    if (px === null || !x.length || px < PAD.left || px > PAD.left + f.w) {
      this.hoverAt = -1;
    } else {
      this.hoverAt = nearest(x, f.t0 + ((px - PAD.left) * (f.t1 - f.t0)) / f.w);
    }
    this.readOut();
  }

  readOut() {
    const { x, ys } = this.data;
    const i = this.hoverAt >= 0 && this.hoverAt < x.length ? this.hoverAt : x.length - 1;
    this.cursor.hidden = this.hoverAt < 0 || i < 0;
    if (!this.cursor.hidden) this.cursor.style.left = `${this.frame().x(x[i])}px`;
    this.time.textContent = i >= 0 ? (this.hoverAt >= 0 ? timeText(x[i]) : `Latest (${timeText(x[i])})`) : '';
    this.opts.series.forEach((s, k) => {
      const v = i >= 0 ? ys[k]?.[i] : null;
      this.values[k].textContent = v === null || v === undefined || Number.isNaN(v) ? '—' : s.value(v);
    });
  }
}
