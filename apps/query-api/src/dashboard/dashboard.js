// Sluice dashboard: polls the query API with the viewer's token and redraws. No framework, no
// build step; every value from the API is written with textContent (never innerHTML).
'use strict';
(function () {
  const COLORS = ['#2563eb', '#16a34a', '#dc2626', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
  const INTERVAL_MS = { '10s': 10e3, '1m': 60e3, '5m': 300e3, '15m': 900e3, '1h': 3600e3 };
  const $ = (id) => document.getElementById(id);
  const svgNs = 'http://www.w3.org/2000/svg';
  let token = '';
  let config;
  let ticks = 0;

  function readToken() {
    const m = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem('sluice-token', decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname); // keep the token out of the address bar
    }
    return sessionStorage.getItem('sluice-token') || '';
  }

  async function api(path, body) {
    const res = await fetch(path, {
      method: body ? 'POST' : 'GET',
      headers: Object.assign({ authorization: 'Bearer ' + token }, body ? { 'content-type': 'application/json' } : {}),
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error((json.error && json.error.code) + ': ' + (json.error && json.error.message));
      // 401: this token will never be taken (a typo, revoked); asking again beats failing forever.
      err.refusedToken = res.status === 401;
      // 503 and 429 say when to come back: refreshing sooner only adds to the load.
      err.retryAfterMs = (Number(res.headers.get('retry-after')) || 0) * 1000;
      throw err;
    }
    return json;
  }

  function cell(row, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
  }

  function fmtTime(iso) {
    return iso ? new Date(iso).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '–';
  }

  function fmtAge(ms) {
    if (ms === null || !isFinite(ms)) return '–';
    const s = Math.max(0, ms / 1000);
    return s < 120 ? s.toFixed(1) + ' s' : s < 7200 ? (s / 60).toFixed(1) + ' min' : (s / 3600).toFixed(1) + ' h';
  }

  function fill(tbodyParent, rows) {
    const tbody = tbodyParent.querySelector('tbody');
    tbody.replaceChildren();
    for (const cols of rows) {
      const tr = document.createElement('tr');
      for (const c of cols) cell(tr, c[0], c[1]);
      tbody.appendChild(tr);
    }
  }

  function windowFilter(column, freshness) {
    const end = freshness.maxEventTime ? Date.parse(freshness.maxEventTime) : Date.now();
    const start = end - INTERVAL_MS[config.interval] * config.buckets;
    return { column, op: '>=', value: new Date(start).toISOString() };
  }

  async function drawFreshness() {
    const { tables } = await api('/v1/tables');
    const shown = config.freshnessTables.length ? tables.filter((t) => config.freshnessTables.includes(t.table)) : tables;
    fill($('freshness'), shown.map((t) => {
      const lag = t.freshness.maxEventTime ? Date.now() - Date.parse(t.freshness.maxEventTime) : null;
      return [[t.table], [String(t.freshness.version)], [t.rowCount === null ? '–' : t.rowCount.toLocaleString('en-US')],
        [String(t.fileCount)], [fmtTime(t.freshness.commitTime)], [fmtTime(t.freshness.maxEventTime)], [fmtAge(lag)]];
    }));
    return new Map(tables.map((t) => [t.table, t.freshness]));
  }

  async function drawThroughput(fresh) {
    const t = config.throughput;
    if (!t || !fresh.has(t.table)) return void ($('throughput-note').textContent = 'no throughput table configured');
    const ans = await api('/v1/tables/' + encodeURIComponent(t.table) + '/query', {
      timeBucket: { column: t.timeColumn, interval: config.interval, as: 'bucket' },
      aggregates: [{ fn: 'count', column: '*', as: 'events' }],
      where: [windowFilter(t.timeColumn, fresh.get(t.table))],
      orderBy: [{ column: 'bucket', dir: 'asc' }],
    });
    const perSec = ans.rows.map((r) => Number(r.events) / (INTERVAL_MS[config.interval] / 1000));
    const last = perSec.length ? perSec[perSec.length - 1] : 0;
    $('throughput-rate').textContent = (last >= 10 ? last.toFixed(0) : last >= 1 ? last.toFixed(1) : last.toFixed(3)) + ' events/s';
    $('throughput-note').textContent = 'last ' + config.interval + ' bucket of ' + t.table + ' · ' +
      ans.rows.reduce((a, r) => a + Number(r.events), 0).toLocaleString('en-US') + ' events in window';
    lineChart($('throughput-chart'), 600, 120, [{ name: 'events/s', color: COLORS[0], points: ans.rows.map((r, i) => [Date.parse(r.bucket), perSec[i]]) }]);
  }

  const DLQ_WINDOW_MS = 5 * 60e3;
  const dlqReadings = [];

  // Rates from validate's cumulative counters: the change over the last five minutes of readings.
  async function drawDlqFromMetrics() {
    const now = await api('/v1/pipeline/dlq');
    const atMs = Date.parse(now.at);
    dlqReadings.push({ atMs, reasons: now.reasons });
    while (dlqReadings.length > 2 && atMs - dlqReadings[1].atMs >= DLQ_WINDOW_MS) dlqReadings.shift();
    const prev = dlqReadings.length > 1 ? dlqReadings[0] : undefined;
    const minutes = prev ? Math.max(1e-3, (atMs - prev.atMs) / 60e3) : 0;
    const reasons = Object.keys(now.reasons).sort((a, b) => now.reasons[b] - now.reasons[a]);
    fill($('dlq'), reasons.map((r) => {
      let delta = prev ? now.reasons[r] - (prev.reasons[r] || 0) : NaN;
      if (delta < 0) delta = now.reasons[r]; // a validate instance restarted: its counter began again
      return [[r], [String(now.reasons[r])], [prev ? (delta / minutes).toFixed(2) : '…']];
    }));
    const down = now.sources.filter((s) => !s.ok).length;
    $('dlq-note').textContent = (reasons.length ? '' : 'no dead letters since validate started') + (down ? ' · ' + down + ' validate endpoint(s) not answering' : '');
  }

  async function drawDlq() {
    if (config.dlqMetrics) return drawDlqFromMetrics();
    fill($('dlq'), []);
    $('dlq-note').textContent = 'no validate metrics endpoint configured (QUERY_API_DLQ_METRICS_URLS)';
  }

  async function drawOrders(fresh) {
    const o = config.orders;
    if (!o || !fresh.has(o.table)) return;
    const ans = await api('/v1/tables/' + encodeURIComponent(o.table) + '/query', {
      timeBucket: { column: o.timeColumn, interval: config.interval, as: 'bucket' },
      groupBy: [o.statusColumn],
      aggregates: [{ fn: 'count', column: '*', as: 'orders' }],
      where: [windowFilter(o.timeColumn, fresh.get(o.table))],
      orderBy: [{ column: 'bucket', dir: 'asc' }, { column: o.statusColumn, dir: 'asc' }],
    });
    const byStatus = new Map();
    for (const r of ans.rows) {
      const s = String(r[o.statusColumn]);
      if (!byStatus.has(s)) byStatus.set(s, []);
      byStatus.get(s).push([Date.parse(r.bucket), Number(r.orders)]);
    }
    const series = [...byStatus.entries()].map(([name, points], i) => ({ name, points, color: COLORS[i % COLORS.length] }));
    const legend = $('orders-legend');
    legend.replaceChildren();
    for (const s of series) {
      const span = document.createElement('span');
      const i = document.createElement('i');
      i.style.background = s.color;
      span.appendChild(i);
      span.appendChild(document.createTextNode(s.name));
      legend.appendChild(span);
    }
    lineChart($('orders-chart'), 1000, 260, series);
    const lastBucket = ans.rows.length ? Date.parse(ans.rows[ans.rows.length - 1].bucket) : NaN;
    fill($('orders-totals'), series.map((s) => {
      const latest = s.points.find((p) => p[0] === lastBucket);
      return [[s.name], [String(latest ? latest[1] : 0)], [String(s.points.reduce((a, p) => a + p[1], 0))]];
    }));
  }

  function lineChart(svg, w, h, series) {
    svg.replaceChildren();
    const pts = series.flatMap((s) => s.points);
    if (!pts.length) return;
    const pad = 40;
    const x0 = Math.min(...pts.map((p) => p[0]));
    const x1 = Math.max(...pts.map((p) => p[0]));
    const y1 = Math.max(...pts.map((p) => p[1])) || 1;
    const sx = (x) => pad + ((x - x0) / Math.max(1, x1 - x0)) * (w - 2 * pad);
    const sy = (y) => h - pad - (y / y1) * (h - 2 * pad);
    const axis = document.createElementNS(svgNs, 'path');
    axis.setAttribute('d', 'M' + pad + ' ' + (h - pad) + 'H' + (w - pad) + 'M' + pad + ' ' + pad + 'V' + (h - pad));
    axis.setAttribute('stroke', '#c4c9d4');
    svg.appendChild(axis);
    const label = (x, y, text, anchor) => {
      const t = document.createElementNS(svgNs, 'text');
      t.setAttribute('x', x);
      t.setAttribute('y', y);
      t.setAttribute('text-anchor', anchor);
      t.textContent = text;
      svg.appendChild(t);
    };
    label(pad - 2, pad + 4, y1 >= 10 ? String(Math.round(y1)) : y1.toPrecision(2), 'end');
    label(pad, h - 6, new Date(x0).toISOString().slice(11, 16), 'start');
    label(w - pad, h - 6, new Date(x1).toISOString().slice(11, 16), 'end');
    for (const s of series) {
      const path = document.createElementNS(svgNs, 'path');
      path.setAttribute('d', s.points.map((p, i) => (i ? 'L' : 'M') + sx(p[0]).toFixed(1) + ' ' + sy(p[1]).toFixed(1)).join(''));
      path.setAttribute('fill', 'none');
      path.setAttribute('stroke', s.color);
      path.setAttribute('stroke-width', '2');
      path.setAttribute('data-series', s.name);
      svg.appendChild(path);
    }
  }

  /** Redraws every panel; resolves to the ms to wait before the next refresh, or -1 to stop. */
  async function refresh() {
    try {
      const fresh = await drawFreshness();
      await Promise.all([drawThroughput(fresh), drawDlq(), drawOrders(fresh)]);
      ticks++;
      $('status').className = 'status';
      $('status').textContent = 'updated ' + new Date().toISOString().slice(11, 19) + 'Z · refresh #' + ticks;
      document.body.dataset.refreshes = String(ticks);
      return config.refreshMs;
    } catch (err) {
      if (err.refusedToken) {
        sessionStorage.removeItem('sluice-token');
        askForToken('the token was refused (' + err.message + '); enter another');
        return -1;
      }
      $('status').className = 'status error';
      $('status').textContent = 'error: ' + err.message;
      return Math.max(config.refreshMs, err.retryAfterMs || 0);
    }
  }

  function askForToken(why) {
    $('panels').hidden = true;
    $('token-form').hidden = false;
    $('status').className = 'status error';
    $('status').textContent = why;
  }

  async function start() {
    config = await (await fetch('/dashboard/config.json')).json();
    token = readToken();
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      sessionStorage.setItem('sluice-token', $('token-input').value);
      location.reload();
    });
    if (!token) {
      askForToken('a bearer token is needed');
      return;
    }
    $('panels').hidden = false;
    // The next refresh starts when this one is done (never two at once against a slow API).
    const loop = async () => {
      const waitMs = await refresh();
      if (waitMs >= 0) setTimeout(loop, waitMs);
    };
    loop();
  }

  start();
})();
