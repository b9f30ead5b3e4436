// history.js - an hour of history per GPU, collected by the console itself while it is open
// (the API answers only the present: GET /v1/gpus), one sample per poll: utilisation (%),
// GPU memory in use and allocated (% of the GPU's), compute allocated (% of the GPU).
//
// Kept in localStorage (figures about GPUs, nothing secret) so that a reload or a second tab
// keeps the curve; samples older than an hour are dropped.  docs/console.md lists the API
// endpoint that would give every browser the whole hour at once.

const KEY = 'tessel.gpu-history.v1';
export const WINDOW_MS = 3600 * 1000;
// Save at most this often: serialising an hour for 8 GPUs (~14k samples) every 2 s is waste.
const SAVE_MS = 15000;

class History {
  constructor() {
    this.byGpu = new Map(); // uuid -> {t: [], util: [], mem: [], memAlloc: [], compute: []} (t in s)
    this.savedAt = 0;
  }

  load() {
    if (this.byGpu.size) return; // already collecting in this page
    try {
      const raw = JSON.parse(localStorage.getItem(KEY) || '{}');
      for (const [uuid, s] of Object.entries(raw)) if (Array.isArray(s.t)) this.byGpu.set(uuid, s);
      this.trim(Date.now());
    } catch { this.byGpu.clear(); }
  }

  save(now) {
    this.savedAt = now;
    try { localStorage.setItem(KEY, JSON.stringify(Object.fromEntries(this.byGpu))); } catch { /* full: keep in memory */ }
  }

  record(gpus, now) {
    for (const g of gpus) {
      let s = this.byGpu.get(g.uuid);
      if (!s) { s = { t: [], util: [], mem: [], memAlloc: [], compute: [] }; this.byGpu.set(g.uuid, s); }
      const total = g.memory_total || 1;
      s.t.push(now / 1000);
      s.util.push(g.utilization ?? null);
      s.mem.push((100 * g.used_mem) / total);
      s.memAlloc.push((100 * g.allocated_mem) / total);
      s.compute.push(g.allocated_milli / 10);
    }
    this.trim(now);
    if (now - this.savedAt > SAVE_MS) this.save(now);
  }

  trim(now) {
    const from = (now - WINDOW_MS) / 1000;
    for (const s of this.byGpu.values()) {
      let i = 0;
      while (i < s.t.length && s.t[i] < from) i++;
      if (i) for (const k of Object.keys(s)) s[k].splice(0, i);
    }
  }

  series(uuid) {
    return this.byGpu.get(uuid) || { t: [], util: [], mem: [], memAlloc: [], compute: [] };
  }
}

export const history = new History();
window.addEventListener('pagehide', () => history.save(Date.now()));
