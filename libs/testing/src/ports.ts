import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port {@link freePort} hands out (above the well-known and most registered services' ports). */
const LOWEST_PORT = 20000;
const HIGHEST_PORT = 65535;

/**
 * Ports this module instance has handed out, so two callers never get the same one (one per
 * process, or per test file under Jest, which loads modules per file).
 */
const handedOut = new Set<number>();

/** The kernel's ephemeral port range (the source ports of outgoing connections). */
export function ephemeralPortRange(): { min: number; max: number } {
  try {
    const [min, max] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(min) && Number.isInteger(max)) return { min, max };
  } catch {
    // not Linux: assume the IANA range
  }
  return { min: 49152, max: 65535 };
}

export interface FreePortOptions {
  /** Ports after the one returned that must be free too (a broker's controller); default 0. */
  readonly following?: number;
  /** Where the choice comes from (default Math.random; tests fix it). */
  readonly random?: () => number;
  /** The ephemeral range to stay out of (default the kernel's; tests give another). */
  readonly ephemeral?: { readonly min: number; readonly max: number };
}

/**
 * A loopback port for a server another process will start (and perhaps restart) on it: free now,
 * with the `following` ports after it free too (a broker's controller), all outside the kernel's
 * ephemeral range (below it, or above it where a host's range leaves room), and never one this
 * module instance handed out before. Throws when the range leaves no room at all.
 *
 * Not `listen(0)`: that port lies inside the ephemeral range, and between its release and the
 * server's start (or while a supervised server is down) an outgoing connection of any process
 * can be given it as its source port. A connected socket holds its port against `listen`
 * ("Address already in use") for as long as the connection lives — a Kafka client's connection
 * lives for the whole test — so the server fails at every start.
 */
export async function freePort(options: FreePortOptions = {}): Promise<number> {
  const following = options.following ?? 0;
  const random = options.random ?? Math.random;
  const { min, max } = options.ephemeral ?? ephemeralPortRange();
  // First ports of a run of `following + 1` outside the range: [from, to] below it, then above.
  const spans = [
    { from: LOWEST_PORT, to: min - 1 - following },
    { from: Math.max(LOWEST_PORT, max + 1), to: HIGHEST_PORT - following },
  ].filter((s) => s.to >= s.from);
  const size = spans.reduce((n, s) => n + s.to - s.from + 1, 0);
  if (size === 0) throw new Error(`no room for ${following + 1} port(s) outside the ephemeral range ${min}-${max} above ${LOWEST_PORT}`);
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = nth(spans, Math.floor(random() * size));
    const ports = Array.from({ length: following + 1 }, (_, i) => port + i);
    if (ports.some((p) => handedOut.has(p))) continue;
    if (!(await allListenable(ports))) continue;
    for (const p of ports) handedOut.add(p);
    return port;
  }
  throw new Error(`no ${following + 1} free port(s) in a row outside the ephemeral range ${min}-${max} after 100 tries`);
}

/** The `index`-th port of the spans taken one after the other. */
function nth(spans: readonly { from: number; to: number }[], index: number): number {
  let left = index;
  for (const s of spans) {
    const count = s.to - s.from + 1;
    if (left < count) return s.from + left;
    left -= count;
  }
  throw new Error(`port index ${index} past the spans`);
}

async function allListenable(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) if (!(await canListen(port))) return false;
  return true;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
