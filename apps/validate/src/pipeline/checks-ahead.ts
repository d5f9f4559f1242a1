import type { RawMessage } from '../routing/route';
import type { CheckOutcome } from '../routing/worker-checks';

/** Checks records (the registry taught their schema ids first), one outcome per record, in order. */
export type CheckRecords = (messages: readonly RawMessage[]) => Promise<CheckOutcome[]>;

/**
 * The contract checks of a batch, started before it is polled: while a transaction commits, the
 * consumer fetches the start of the next batch ({@link prepare} gets those messages), and their
 * checks run in the worker thread during the commit instead of after it. A check depends only
 * on the record (its bytes, check headers and timestamp), so its outcome is the same whichever
 * transaction finally routes it; it is used only for the very message objects the next batch
 * holds (the consumer hands out the ones it fetched ahead), and everything else in the batch is
 * checked when the batch asks. A failed check ahead is dropped: the batch checks those records
 * itself and meets the failure there (a registry that does not answer, a failed worker).
 */
export class ChecksAhead {
  private prepared = new Map<RawMessage, CheckOutcome>();
  private preparing: Promise<void> | undefined;

  constructor(private readonly checkRecords: CheckRecords) {}

  /** Starts checking messages fetched ahead of their batch (at once: several sets may be on their way). */
  prepare(messages: readonly RawMessage[]): void {
    const checked = this.checkRecords(messages).then(
      (outcomes) => {
        for (let i = 0; i < messages.length; i++) this.prepared.set(messages[i], outcomes[i]);
      },
      () => undefined,
    );
    const before = this.preparing;
    this.preparing = before ? Promise.all([before, checked]).then(() => undefined) : checked;
  }

  /**
   * Each record's outcome: prepared ahead where the batch holds that message, the rest checked
   * now. Forgets what was prepared: a message the batch does not hold was dropped (a rebalance,
   * a rewind), and is read again as a new object.
   */
  async outcomes(batch: readonly RawMessage[]): Promise<CheckOutcome[]> {
    await this.preparing;
    this.preparing = undefined;
    const prepared = this.prepared;
    this.prepared = new Map();
    const out: CheckOutcome[] = new Array(batch.length);
    const missing: number[] = [];
    for (let i = 0; i < batch.length; i++) {
      const outcome = prepared.get(batch[i]);
      if (outcome === undefined) missing.push(i);
      else out[i] = outcome;
    }
    if (missing.length > 0) {
      const checked = await this.checkRecords(missing.map((i) => batch[i]));
      for (let k = 0; k < missing.length; k++) out[missing[k]] = checked[k];
    }
    return out;
  }
}
