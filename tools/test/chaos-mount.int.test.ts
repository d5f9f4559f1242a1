import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LakeMount } from '../src/chaos/scenarios';

// The read-only remount of the storage-fail scenario on a real tmpfs (root, as the chaos suite
// needs): the kernel refuses it as busy while a file is open for writing, which merge-compaction
// does for the milliseconds a Parquet file takes to write.

describe('LakeMount', () => {
  let dir: string;
  let mount: LakeMount;

  beforeEach(() => {
    dir = mkdtempSync(join(process.env.SLUICE_TEST_DIR ?? tmpdir(), 'chaos-mount-'));
    mount = new LakeMount(dir, 16);
    mount.mount();
  });

  afterEach(() => {
    mount.unmount();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits out a file open for writing, then makes every write fail with EROFS until made writable again', async () => {
    const fd = openSync(join(dir, 'part-0.parquet'), 'w');
    const closer = setTimeout(() => closeSync(fd), 300);
    const attempts = await mount.readOnly(true);
    clearTimeout(closer);
    expect(attempts).toBeGreaterThan(1);
    expect(() => writeFileSync(join(dir, 'x'), 'x')).toThrow(/EROFS/);
    expect(await mount.readOnly(false)).toBe(1);
    writeFileSync(join(dir, 'x'), 'x');
  });

  it('names the busy mount point when the file stays open past the wait', async () => {
    const fd = openSync(join(dir, 'held.parquet'), 'w');
    try {
      await expect(mount.readOnly(true, 200)).rejects.toThrow(/CHAOS_MOUNT_FAILED: mount -o remount,ro .* \(\d+ attempts\): .*busy/);
      writeFileSync(join(dir, 'still-writable'), 'x');
    } finally {
      closeSync(fd);
    }
  });

  it('fills the disk: shrinks to the used size plus headroom, re-measuring when it grew between measure and remount', async () => {
    writeFileSync(join(dir, 'part-0.parquet'), Buffer.alloc(5 * 1024 * 1024, 1));
    const used = mount.usedMb();
    expect(used).toBeGreaterThanOrEqual(5);
    // A stale measure (taken before the file was written) is what the race looks like; the kernel
    // refuses a tmpfs smaller than its contents, so the first attempt fails and the second holds.
    const stale = [1];
    const filled = await mount.fill(1, 5, () => stale.shift() ?? mount.usedMb());
    expect(filled).toEqual({ sizeMb: used + 1, attempts: 2 });
    expect(() => writeFileSync(join(dir, 'more'), Buffer.alloc(2 * 1024 * 1024, 1))).toThrow(/ENOSPC/);
    mount.resize(16);
    writeFileSync(join(dir, 'more'), Buffer.alloc(2 * 1024 * 1024, 1));
  });

  it('gives up with the kernel\'s refusal after the attempts allowed', async () => {
    writeFileSync(join(dir, 'part-0.parquet'), Buffer.alloc(3 * 1024 * 1024, 1));
    await expect(mount.fill(0, 2, () => 1)).rejects.toThrow(/CHAOS_MOUNT_FAILED: mount -o remount,size=1m .* \(2 attempts\): .*bad option/);
    writeFileSync(join(dir, 'still-writable'), 'x');
  });
});
