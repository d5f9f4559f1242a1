import type { AnyContract } from '../contract';
import { clickstream } from './clickstream';
import { inventory } from './inventory';
import { orders } from './orders';

export * from './orders';
export * from './inventory';
export * from './clickstream';

/** Every contract by name. */
export const CONTRACTS = Object.freeze({ orders, inventory, clickstream } as const);

/** Name of a known contract. */
export type ContractName = keyof typeof CONTRACTS;

/** All contract names. */
export const CONTRACT_NAMES = Object.freeze(Object.keys(CONTRACTS) as ContractName[]);

/** The contract of that name, or undefined (never throws: names come from untrusted headers). */
export function contractByName(name: string): AnyContract | undefined {
  return Object.prototype.hasOwnProperty.call(CONTRACTS, name) ? CONTRACTS[name as ContractName] : undefined;
}
