import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { claimScratchDir } from './scratch';

const startOf = async (pid: number) => (await fs.readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ')[19];

// A SIGKILLed merge-compaction left its staged rows, Parquet outputs and DuckDB spill in the
// scratch directory, and a restarted container keeps its emptyDir: they piled up.
describe('claimScratchDir', () => {
  let root: string;
  beforeEach(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'scratch-'));
  });
  afterEach(() => fs.rm(root, { recursive: true, force: true }));

  const leave = async (name: string, bytes: number) => {
    await fs.mkdir(path.join(root, name, 'nested'), { recursive: true });
    await fs.writeFile(path.join(root, name, 'nested', 'part.parquet'), Buffer.alloc(bytes));
  };

  it('removes the directories of processes that are gone and keeps those of running ones and anything else', async () => {
    const sleeper = spawn('sleep', ['30']);
    const sleeperPid = sleeper.pid as number;
    try {
      const mine = await startOf(process.pid);
      // A predecessor with this very pid (a restarted container's pid 1) but another start time.
      await leave(`sluice-run-${process.pid}-${Number(mine) - 1}`, 1000);
      await leave(`sluice-run-${sleeperPid}-${await startOf(sleeperPid)}`, 10);
      await leave('sluice-run-notapid-1', 10);
      await leave('someone-elses', 10);

      const claim = await claimScratchDir(root);
      expect(claim.dir).toBe(path.join(root, `sluice-run-${process.pid}-${mine}`));
      expect(claim.swept).toEqual({ dirs: 1, bytes: 1000 });
      expect(claim.failed).toEqual([]);
      expect((await fs.readdir(root)).sort()).toEqual([`sluice-run-${process.pid}-${mine}`, `sluice-run-${sleeperPid}-${await startOf(sleeperPid)}`, 'sluice-run-notapid-1', 'someone-elses'].sort());

      const sleeperDir = `sluice-run-${sleeperPid}-${await startOf(sleeperPid)}`;
      sleeper.kill('SIGKILL');
      await new Promise((resolve) => sleeper.once('exit', resolve));
      // Claimed again by this process: its own directory is kept, the dead sleeper's is swept.
      await fs.writeFile(path.join(claim.dir, 'staged.ndjson'), 'x');
      const again = await claimScratchDir(root);
      expect(again.dir).toBe(claim.dir);
      expect(again.swept).toEqual({ dirs: 1, bytes: 10 });
      expect(await fs.readdir(root)).not.toContain(sleeperDir);
      expect(await fs.readdir(claim.dir)).toEqual(['staged.ndjson']);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
