import { SluiceError } from '@sluice/errors';

/**
 * Codes validate raises itself, as a closed catalog; docs/design/validate.md lists the same
 * codes and errors.test.ts keeps the two in step. Kafka failures keep their KAFKA_* codes
 * (retryable ones are retried by the transactional processor, the others stop the process).
 */
export const VALIDATE_ERRORS = {
  VALIDATE_INTERNAL: { retryable: false, message: 'a contract check threw; the event was dead-lettered with this reason' },
  VALIDATE_REGISTRY_UNAVAILABLE: { retryable: true, message: 'the schema registry did not answer, or refused the credentials, for a Confluent schema id; the batch is aborted and retried' },
  VALIDATE_CHECK_WORKER_FAILED: { retryable: true, message: 'the thread checking events against their contracts failed or exited; the batch is aborted and retried on a new one' },
} as const;

export type ValidateErrorCode = keyof typeof VALIDATE_ERRORS;

/** Builds the SluiceError of a catalog code. */
export function validateError(code: ValidateErrorCode, details: Record<string, unknown> = {}, cause?: unknown): SluiceError<ValidateErrorCode> {
  const entry = VALIDATE_ERRORS[code];
  return new SluiceError(code, entry.message, { retryable: entry.retryable, details, cause });
}
