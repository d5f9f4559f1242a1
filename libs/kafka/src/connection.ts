/** Settings every client shares, and their translation to librdkafka properties. */

import { securityProperties, type KafkaSecurity } from './security';

/** librdkafka properties passed through verbatim (escape hatch; invariants still win). */
export type RdkafkaProperties = Record<string, string | number | boolean>;

/** Connection settings shared by producer, consumer and admin. */
export interface ConnectionOptions {
  /** Bootstrap brokers, `host:port`, as a list or a comma-separated string. */
  brokers: string | readonly string[];
  /** Client id sent to brokers and used in events; default `sluice`. */
  clientId?: string;
  /** TLS and SASL; absent = plaintext without authentication. Wins over `rdkafka`. */
  security?: KafkaSecurity;
  /** Extra librdkafka properties (security, tuning). The lib's invariants override them. */
  rdkafka?: RdkafkaProperties;
}

/** The bootstrap list as librdkafka wants it. */
export function brokerList(brokers: string | readonly string[]): string {
  const list = typeof brokers === 'string' ? brokers.split(',') : [...brokers];
  const cleaned = list.map((b) => b.trim()).filter((b) => b.length > 0);
  if (cleaned.length === 0) throw new RangeError('brokers must name at least one host:port');
  return cleaned.join(',');
}

/** librdkafka properties common to every client. */
export function baseProperties(options: ConnectionOptions): RdkafkaProperties {
  return {
    ...options.rdkafka,
    ...securityProperties(options.security),
    'bootstrap.servers': brokerList(options.brokers),
    'client.id': options.clientId ?? 'sluice',
  };
}

/** Wraps a node-style callback API into a promise. */
export function callback<T = void>(run: (done: (err: unknown, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    run((err, value) => (err ? reject(err) : resolve(value as T)));
  });
}
