// chart.test.mjs - unit tests of the console's chart module's pure parts (web/app/chart.js):
// the time and value ticks, the decimation of a series to the canvas's pixel columns, the
// idle band's columns, the pointer's nearest point, series put on one time axis, the grouping of charts into shared
// canvases.  Node's own test runner, no browser:
//   TZ=UTC node --test web/test/chart.test.mjs      (tests/t/t7002-console-chart.t)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { timeTicks, timeLabel, timeText, valueTicks, decimate, bandColumns, nearest, bands, unionColumns } from '../app/chart.js';

process.env.TZ = 'UTC';
const T0 = Date.UTC(2026, 10, 19, 14, 23, 17) / 1000; // Thu 19 Nov 2026 14:23:17 UTC

test('time ticks of an hour: round 10 minutes, HH:MM, at least 60 px apart', () => {
  const ticks = timeTicks(T0, T0 + 3600, 560);
  assert.deepEqual(ticks.map((t) => t.label), ['14:30', '14:40', '14:50', '15:00', '15:10', '15:20']);
  for (const t of ticks) assert.equal(t.t % 600, 0);
  assert.ok((600 * 560) / 3600 >= 60);
});

test('time ticks of a day: round hours, a local midnight named by its day', () => {
  const ticks = timeTicks(T0, T0 + 86400, 560);
  const step = ticks[1].t - ticks[0].t;
  assert.equal(step, 10800);
  assert.ok((step * 560) / 86400 >= 60);
  assert.equal(ticks[0].label, '15:00');
  assert.ok(ticks.some((t) => t.label === 'Fri 20'), ticks.map((t) => t.label).join(' '));
  for (const t of ticks) assert.equal(t.t % 3600, 0);
});

test('time ticks of a week: one per day at midnight, named by the day', () => {
  const ticks = timeTicks(T0, T0 + 7 * 86400, 560);
  assert.deepEqual(ticks.map((t) => t.label), ['Fri 20', 'Sat 21', 'Sun 22', 'Mon 23', 'Tue 24', 'Wed 25', 'Thu 26']);
  for (const t of ticks) assert.equal(t.t % 86400, 0);
});

test('time ticks of a narrow week (phone): fewer labels, still apart', () => {
  const ticks = timeTicks(T0, T0 + 7 * 86400, 200);
  assert.ok(ticks.length >= 2 && ticks.length <= 4, String(ticks.length));
  assert.ok(((ticks[1].t - ticks[0].t) * 200) / (7 * 86400) >= 60);
});

test('time ticks of a range longer than a week per label: still apart', () => {
  const ticks = timeTicks(T0, T0 + 365 * 86400, 300);
  assert.ok(ticks.length >= 2 && ticks.length <= 6, String(ticks.length));
  for (let k = 1; k < ticks.length; k++) assert.ok(((ticks[k].t - ticks[k - 1].t) * 300) / (365 * 86400) >= 60);
});

test('time ticks of an empty or inverted range: none', () => {
  assert.deepEqual(timeTicks(T0, T0, 500), []);
  assert.deepEqual(timeTicks(T0, T0 - 10, 500), []);
  assert.deepEqual(timeTicks(T0, T0 + 60, 0), []);
});

test('labels and the read-out follow the local clock', () => {
  assert.equal(timeLabel(Date.UTC(2026, 10, 26, 0, 0) / 1000, 3600), 'Thu 26');
  assert.equal(timeLabel(Date.UTC(2026, 10, 26, 9, 5) / 1000, 300), '09:05');
  assert.equal(timeText(Date.UTC(2026, 10, 26, 9, 5) / 1000), 'Thu 26 09:05');
});

test('value ticks: 0 to 100 % on a GPU chart, round steps, labels apart', () => {
  assert.deepEqual(valueTicks(100, 102), [0, 25, 50, 75, 100]);
  assert.deepEqual(valueTicks(100, 300), [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  assert.deepEqual(valueTicks(100, 40), [0, 100]);
});

test('value ticks: GPUs in use (1, 2, 8 GPUs)', () => {
  assert.deepEqual(valueTicks(1, 122), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  assert.deepEqual(valueTicks(2, 122), [0, 0.5, 1, 1.5, 2]);
  assert.deepEqual(valueTicks(8, 122), [0, 2, 4, 6, 8]);
  assert.deepEqual(valueTicks(0, 122), [0]);
});

// A week of 10-minute points, as tesseld answers the week.
function week(f) {
  const xs = [], ys = [];
  for (let i = 0; i < 1008; i++) { xs.push(T0 + i * 600); ys.push(f(i)); }
  return { xs, ys, x0: T0, x1: T0 + 1008 * 600 };
}

test('decimation: at most 4 points per pixel column, peaks and troughs kept', () => {
  const { xs, ys, x0, x1 } = week((i) => (i === 500 ? 97 : i === 700 ? 3 : 40 + (i % 7)));
  const lines = decimate(xs, ys, x0, x1, 300);
  assert.equal(lines.length, 1);
  const pts = lines[0].length / 2;
  assert.ok(pts <= 4 * 300 && pts < 1008, String(pts));
  const vals = lines[0].filter((_, k) => k % 2 === 1);
  assert.equal(Math.max(...vals), 97);
  assert.equal(Math.min(...vals), 3);
  assert.equal(vals[0], ys[0]);
  assert.equal(vals.at(-1), ys.at(-1));
  // Columns ascend: the polyline never goes back.
  const px = lines[0].filter((_, k) => k % 2 === 0);
  for (let k = 1; k < px.length; k++) assert.ok(px[k] >= px[k - 1]);
  assert.ok(px.at(-1) < 300);
});

test('decimation: more columns than points keeps every point', () => {
  const { xs, ys, x0, x1 } = week((i) => i % 100);
  const lines = decimate(xs, ys, x0, x1, 2016);
  assert.equal(lines.length, 1);
  assert.deepEqual(lines[0].filter((_, k) => k % 2 === 1), ys);
});

test('decimation: a null is a gap (no line across an idle stretch, never a 0 %)', () => {
  const { xs, ys, x0, x1 } = week((i) => (i >= 300 && i < 400 ? null : 40));
  const lines = decimate(xs, ys, x0, x1, 500);
  assert.equal(lines.length, 2);
  for (const l of lines) assert.ok(l.filter((_, k) => k % 2 === 1).every((v) => v === 40));
  assert.ok(lines[0].at(-2) < lines[1][0]);
  assert.deepEqual(decimate(xs, xs.map(() => null), x0, x1, 500), []);
});

test('idle band: each value holds for its step, per column the highest', () => {
  const xs = [0, 10, 20, 30], ys = [100, null, 50, 100];
  const b = bandColumns(xs, ys, 0, 40, 40, 10);
  assert.equal(b.length, 40);
  assert.ok(b.slice(0, 10).every((v) => v === 100));
  assert.ok(b.slice(10, 20).every((v) => Number.isNaN(v)));
  assert.ok(b.slice(20, 30).every((v) => v === 50));
  assert.ok(b.slice(30, 40).every((v) => v === 100));
  // Squeezed into 2 columns: the highest value over each.
  assert.deepEqual([...bandColumns(xs, ys, 0, 40, 2, 10)], [100, 100]);
  // A week of points into 300 columns: every column covered, none beyond.
  const w = week(() => 100);
  const wb = bandColumns(w.xs, w.ys, w.x0, w.x1, 300, 600);
  assert.ok(wb.every((v) => v === 100));
});

test('series on one time axis: the union of their times, NaN where a series has no point', () => {
  const series = [
    { name: 'a', t: [600, 1200, 1800], milli: [500, 250, null] },
    { name: 'b', t: [0, 1200, 2400], milli: [1000, 2000, 333] },
    { name: 'c', t: [], milli: [] },
  ];
  const { x, ys } = unionColumns(series, 'milli', 1000);
  assert.deepEqual([...x], [0, 600, 1200, 1800, 2400]);
  assert.equal(ys.length, 3);
  assert.deepEqual([...ys[0]], [NaN, 0.5, 0.25, NaN, NaN]); // null: a gap, never 0
  assert.deepEqual([...ys[1]], [1, NaN, 2, NaN, 0.333]);
  assert.deepEqual([...ys[2]], [NaN, NaN, NaN, NaN, NaN]);
  // Nothing at all: an empty axis; the same time in every series once.
  assert.equal(unionColumns([], 'milli').x.length, 0);
  const same = unionColumns([{ t: [10, 20], v: [1, 2] }, { t: [10, 20], v: [3, 4] }], 'v');
  assert.deepEqual([...same.x], [10, 20]);
  assert.deepEqual(same.ys.map((y) => [...y]), [[1, 2], [3, 4]]);
  // The gaps are gaps to the chart: decimation breaks the line there.
  assert.deepEqual(decimate(x, ys[0], 0, 2400, 4).length, 1);
  assert.deepEqual(decimate(x, ys[1], 0, 2400, 4).length, 3);
});

test('nearest point to the pointer', () => {
  const xs = [0, 10, 20, 30];
  assert.equal(nearest(xs, -5), 0);
  assert.equal(nearest(xs, 4), 0);
  assert.equal(nearest(xs, 6), 1);
  assert.equal(nearest(xs, 29), 3);
  assert.equal(nearest(xs, 99), 3);
  assert.equal(nearest([], 5), -1);
  assert.equal(nearest([7], 5), 0);
});

test('shared canvases: a row of charts is one band, rows apart are two, a canvas spans only its charts', () => {
  // Two cards side by side whose charts sit 45 px apart (a slice table above one), then a row
  // below: two bands; the first spans both charts (x 0..1218, y 10..185), the second only its chart.
  const boxes = [{ x: 630.4, y: 55, w: 588, h: 130 }, { x: 0, y: 10.2, w: 588, h: 130 }, { x: 0, y: 400, w: 588, h: 130 }];
  const b = bands(boxes, 1);
  assert.equal(b.length, 2);
  assert.deepEqual([b[0].x0, b[0].y0, b[0].w, b[0].hgt], [0, 10, 1219, 175]);
  assert.deepEqual(b[0].places.map((p) => p.i).sort(), [0, 1]);
  assert.deepEqual([b[1].x0, b[1].y0, b[1].w, b[1].hgt], [0, 400, 588, 130]);
  assert.deepEqual(b[1].places, [{ i: 2, x: 0, y: 0, w: 588, h: 130 }]);
  // Every place inside its band's canvas.
  for (const band of b) for (const p of band.places) assert.ok(p.x >= 0 && p.y >= 0 && p.x + p.w <= band.w + 1 && p.y + p.h <= band.hgt + 1, JSON.stringify(p));
});

test('shared canvases: places on whole device pixels; charts stacked (phone) one band each; none', () => {
  const [b] = bands([{ x: 10.3, y: 5.2, w: 300, h: 130 }, { x: 320.8, y: 5.2, w: 300, h: 130 }], 2);
  assert.deepEqual(b.places.map((p) => [p.x, p.y]), [[0.5, 0], [311, 0]]);
  for (const p of b.places) assert.ok(Number.isInteger(p.x * 2) && Number.isInteger(p.y * 2));
  const stacked = bands([{ x: 0, y: 0, w: 343, h: 130 }, { x: 0, y: 130, w: 343, h: 130 }, { x: 0, y: 500, w: 343, h: 130 }]);
  assert.equal(stacked.length, 3, 'boxes that only touch are not a band');
  assert.deepEqual(bands([]), []);
});
