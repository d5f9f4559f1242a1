import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CONTRACTS } from '@sluice/contracts';
import { LakeTable, LocalStorage } from '@sluice/lake';
import { bronzeCounts, idDigest } from './e2e';

// The bench's delivery check compares bronze's ids with the acknowledged ones by a digest that
// DuckDB computes on one side and JavaScript on the other: both must agree, and the digest must
// tell two sets of the same size apart.
describe('the bench delivery digest', () => {
  it('is the same in DuckDB over bronze as in JavaScript over the ids, counting each id once', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'sluice-bench-digest-'));
    try {
      const name = CONTRACTS.orders.tables.bronze;
      const table = await LakeTable.create(new LocalStorage(path.join(root, name)), { name, columns: [{ name: 'event_id', type: 'string', nullable: false }] });
      const ids = Array.from({ length: 500 }, (_, i) => `b1-o${i}`);
      await table.append({ rows: [...ids, ids[7]].map((event_id) => ({ event_id })) }); // one id twice
      const counts = await bronzeCounts(root);
      expect({ rows: counts.rows, eventIds: counts.eventIds }).toEqual({ rows: 501, eventIds: 500 });
      expect(counts.digest).toBe(ids.reduce((sum, id) => sum + idDigest(id), 0n));
      // A lost id and a stray one: same count, another digest.
      const swapped = [...ids.slice(1), 'b1-stray'];
      expect(swapped.reduce((sum, id) => sum + idDigest(id), 0n)).not.toBe(counts.digest);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
