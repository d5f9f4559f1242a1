import type { Issue } from '@sluice/errors';

/** What the edge checks need from the contracts: kept narrow so the check is a pure function. */
export interface EdgeContracts {
  /** The contract an event names, or undefined when it names none. */
  contractOf(event: Record<string, unknown>): string | undefined;
  /** True when `name` is a known contract. */
  has(name: string): boolean;
  /**
   * Envelope + schema + data rules of `contract`. On success, the entity key that becomes the
   * Kafka record key.
   */
  check(contract: string, event: Record<string, unknown>): { ok: true; key: string } | { ok: false; envelope: boolean; issues: Issue[] };
}
