import { chromium } from 'playwright-core';

/** One panel of the chart: named series of (seconds, value) points on a shared time axis. */
export interface Panel {
  readonly title: string;
  readonly unit: string;
  readonly series: readonly { readonly name: string; readonly color: string; readonly points: readonly (readonly [number, number])[]; readonly dots?: boolean }[];
}

const W = 960;
const PANEL_H = 220;
const PAD = { left: 70, right: 20, top: 30, bottom: 30 };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  return [1, 2, 5, 10].map((m) => m * p).find((c) => c >= v)!;
}

/** Renders stacked panels (time on x, seconds) as a self-contained SVG document. */
export function renderSvg(title: string, panels: readonly Panel[]): string {
  const maxT = Math.max(1, ...panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([t]) => t))));
  const height = 40 + panels.length * PANEL_H;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  panels.forEach((panel, i) => {
    const top = 40 + i * PANEL_H;
    const x0 = PAD.left;
    const x1 = W - PAD.right;
    const y0 = top + PANEL_H - PAD.bottom;
    const y1 = top + PAD.top;
    const maxV = niceMax(Math.max(0, ...panel.series.flatMap((s) => s.points.map(([, v]) => v))));
    const x = (t: number) => x0 + ((x1 - x0) * t) / maxT;
    const y = (v: number) => y0 - ((y0 - y1) * v) / maxV;
    parts.push(`<text x="${x0}" y="${top + 18}" font-weight="bold">${esc(panel.title)} (${esc(panel.unit)})</text>`);
    parts.push(`<line x1="${x0}" y1="${y0}" x2="${x1}" y2="${y0}" stroke="#333"/><line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y1}" stroke="#333"/>`);
    for (let k = 0; k <= 4; k++) {
      const v = (maxV * k) / 4;
      parts.push(`<line x1="${x0}" y1="${y(v)}" x2="${x1}" y2="${y(v)}" stroke="#ddd"/>`);
      parts.push(`<text x="${x0 - 6}" y="${y(v) + 4}" text-anchor="end">${v >= 1000 ? `${+(v / 1000).toFixed(1)}k` : +v.toFixed(2)}</text>`);
    }
    for (let k = 0; k <= 6; k++) {
      const t = (maxT * k) / 6;
      parts.push(`<text x="${x(t)}" y="${y0 + 16}" text-anchor="middle">${Math.round(t)} s</text>`);
    }
    panel.series.forEach((s, j) => {
      if (s.dots) for (const [t, v] of s.points) parts.push(`<circle cx="${x(t).toFixed(1)}" cy="${y(v).toFixed(1)}" r="2" fill="${s.color}"/>`);
      else if (s.points.length > 0) parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`);
      parts.push(`<rect x="${x1 - 200}" y="${top + 8 + j * 15}" width="10" height="10" fill="${s.color}"/><text x="${x1 - 185}" y="${top + 17 + j * 15}">${esc(s.name)}</text>`);
    });
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** Renders an SVG to a PNG file with headless Chromium (playwright-core, the system's /usr/bin/chromium). */
export async function svgToPng(svg: string, file: string, executablePath = '/usr/bin/chromium'): Promise<void> {
  const browser = await chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  try {
    const page = await browser.newPage();
    const size = /width="(\d+)" height="(\d+)"/.exec(svg);
    await page.setViewportSize({ width: Number(size?.[1] ?? 960), height: Number(size?.[2] ?? 700) });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.screenshot({ path: file, fullPage: true });
  } finally {
    await browser.close();
  }
}
