import type { FastifyReply } from 'fastify';
import { INGEST_ERRORS, type IngestErrorCode } from '../errors';

/** Sends a catalog error as `{ error: { code, message, retryable, details } }` plus `extra` fields. */
export function replyError(
  reply: FastifyReply,
  code: IngestErrorCode,
  retryAfterSeconds: number,
  details: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): FastifyReply {
  const entry = INGEST_ERRORS[code];
  // Every retryable answer says when to come back (docs/design/ingest.md), a 500 included.
  if (entry.retryable) reply.header('retry-after', String(retryAfterSeconds));
  return reply.code(entry.status).send({ error: { code, message: entry.message, retryable: entry.retryable, details }, ...extra });
}
