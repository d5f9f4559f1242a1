import { SluiceError } from '@sluice/errors';

/**
 * Every error ingest answers with, as a closed catalog: code, HTTP status, whether the client may
 * retry the same request, and the message a producer sees. docs/design/ingest.md lists the same
 * codes; errors.test.ts keeps the two in step.
 */
export const INGEST_ERRORS = {
  INGEST_UNAUTHENTICATED: { status: 401, retryable: false, message: 'missing or unknown API key' },
  INGEST_FORBIDDEN: { status: 403, retryable: false, message: 'the API key may not send any event of this request' },
  INGEST_NOT_FOUND: { status: 404, retryable: false, message: 'no such route' },
  INGEST_BODY_TOO_LARGE: { status: 413, retryable: false, message: 'request body exceeds the size limit' },
  INGEST_BATCH_TOO_LARGE: { status: 413, retryable: false, message: 'batch has more events than the limit' },
  INGEST_UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false, message: 'unsupported Content-Type' },
  INGEST_BODY_INVALID: { status: 400, retryable: false, message: 'request body cannot be read as events' },
  INGEST_ALL_REJECTED: { status: 422, retryable: false, message: 'every event of the request was rejected' },
  INGEST_EVENT_REFUSED_BY_KAFKA: { status: 413, retryable: false, message: 'the raw topic refuses an event this large (its max.message.bytes is below the event); resending cannot succeed' },
  INGEST_OVERLOADED: { status: 429, retryable: true, message: 'ingest is at its in-flight limit; retry later' },
  INGEST_UNAVAILABLE: { status: 503, retryable: true, message: 'Kafka did not acknowledge the events; retry later' },
  INGEST_REGISTRY_UNAVAILABLE: { status: 503, retryable: true, message: 'the schema registry did not resolve a Confluent schema id; retry later' },
  INGEST_SHUTTING_DOWN: { status: 503, retryable: true, message: 'ingest is shutting down; retry on another instance' },
  INGEST_INTERNAL: { status: 500, retryable: true, message: 'unexpected error' },
} as const;

export type IngestErrorCode = keyof typeof INGEST_ERRORS;

/** Builds the SluiceError for a catalog code; `details` are shown to the client. */
export function ingestError(code: IngestErrorCode, details: Record<string, unknown> = {}, cause?: unknown): SluiceError<IngestErrorCode> {
  const entry = INGEST_ERRORS[code];
  return new SluiceError(code, entry.message, { retryable: entry.retryable, details, cause });
}
