import { SluiceError } from '@sluice/errors';

/**
 * Errors validate raises itself, as a closed catalog; docs/design/validate.md lists the same
 * codes and errors.test.ts keeps the two in step. `retryable` decides: retry the batch (the
 * transaction was aborted, offsets rewound) or stop the process (a supervisor restarts it).
 */
export const VALIDATE_ERRORS = {
  VALIDATE_INTERNAL: { retryable: false, message: 'a contract check threw; the event was dead-lettered with this reason' },
  VALIDATE_TRANSACTION_FAILED: { retryable: true, message: 'the batch transaction failed and was aborted; the batch is re-read' },
  VALIDATE_FENCED: { retryable: false, message: 'another instance took over this transactional id; this one stops' },
  VALIDATE_TOPIC_MISSING: { retryable: false, message: 'a topic validate writes to does not exist' },
} as const;

export type ValidateErrorCode = keyof typeof VALIDATE_ERRORS;

/** Builds the SluiceError of a catalog code. */
export function validateError(code: ValidateErrorCode, details: Record<string, unknown> = {}, cause?: unknown): SluiceError<ValidateErrorCode> {
  const entry = VALIDATE_ERRORS[code];
  return new SluiceError(code, entry.message, { retryable: entry.retryable, details, cause });
}
