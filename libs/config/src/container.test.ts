import { parseCgroupMemoryLimit } from './container';

describe('parseCgroupMemoryLimit', () => {
  it('reads a v2 or v1 limit in bytes', () => {
    expect(parseCgroupMemoryLimit('2147483648\n')).toBe(2 * 1024 ** 3);
    expect(parseCgroupMemoryLimit('536870912')).toBe(512 * 1024 ** 2);
  });

  it('treats "max", v1 unlimited, zero, junk and a missing file as no limit', () => {
    for (const text of ['max\n', '9223372036854771712', '0', '', '-1', '1e9', '512M', undefined]) expect(parseCgroupMemoryLimit(text)).toBeUndefined();
  });
});
