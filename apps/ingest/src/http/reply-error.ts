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
  if (entry.retryable && entry.status !== 500) reply.header('retry-after', String(retryAfterSeconds));
  return reply.code(entry.status).send({ error: { code, message: entry.message, retryable: entry.retryable, details }, ...extra });
}
