import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port {@link freePort} hands out (above the well-known and most registered services' ports). */
const LOWEST_PORT = 20000;

/** Ports this process has handed out, so two callers never get the same one. */
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

/**
 * A loopback port for a server another process will start (and perhaps restart) on it: free now,
 * with the `following` ports after it free too (a broker's controller), all below the kernel's
 * ephemeral range, and never one this process handed out before.
 *
 * Not `listen(0)`: that port lies inside the ephemeral range, and between its release and the
 * server's start (or while a supervised server is down) an outgoing connection of any process
 * can be given it as its source port. A connected socket holds its port against `listen`
 * ("Address already in use") for as long as the connection lives — a Kafka client's connection
 * lives for the whole test — so the server fails at every start.
 */
export async function freePort(options: { following?: number } = {}): Promise<number> {
  const following = options.following ?? 0;
  const top = Math.min(ephemeralPortRange().min, 65536) - 1 - following;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (top - LOWEST_PORT + 1));
    const ports = Array.from({ length: following + 1 }, (_, i) => port + i);
    if (ports.some((p) => handedOut.has(p))) continue;
    if (!(await allListenable(ports))) continue;
    for (const p of ports) handedOut.add(p);
    return port;
  }
  throw new Error(`no ${following + 1} free port(s) in a row between ${LOWEST_PORT} and ${top + following}`);
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
