import { renderSvg } from './chart';
import { percentiles } from './e2e';

describe('percentiles', () => {
  it('takes nearest-rank percentiles and counts', () => {
    const v = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentiles(v)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100, n: 100 });
  });

  it('is NaN on no values rather than 0 (no data is not a fast answer)', () => {
    const p = percentiles([]);
    expect(Number.isNaN(p.p95)).toBe(true);
    expect(p.n).toBe(0);
  });
});

describe('renderSvg', () => {
  it('draws one polyline per line series with every point, dots for dot series, escapes text', () => {
    const svg = renderSvg('a <b> & c', [
      { title: 'T', unit: 'ev/s', series: [{ name: 'x', color: '#000', points: [[0, 1], [1, 5], [2, 3]] }] },
      { title: 'F', unit: 's', series: [{ name: 'p', color: '#f00', points: [[0, 1], [2, 2]], dots: true }] },
    ]);
    expect(svg).toContain('a &lt;b> &amp; c');
    const poly = /<polyline[^>]*points="([^"]+)"/.exec(svg)![1].split(' ');
    expect(poly).toHaveLength(3);
    expect(svg.match(/<circle /g)).toHaveLength(2);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="960" height="480"/);
  });
});
