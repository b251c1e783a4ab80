/**
 * outcomes-ledger: a client of the outcome ledger's host write API (docs/api.md "Host write API")
 * and the protected write (clients/typescript/README.md "The protected write"): the outcome of a tool call is recorded
 * as it happened, and when the block cannot prove what happened it is `outcome_unknown`.
 *
 * ```js
 * import { Ledger } from 'outcomes-ledger';
 * const ledger = new Ledger({ baseUrl: 'http://127.0.0.1:3000', token: process.env.OUTCOMES_HOST_TOKEN });
 * await ledger.protectedWrite({ sessionKey, logicalTurnId, mutationId, tool }, async (op) => createIssue());
 * ```
 */
export { Ledger, newId, newTurnId, recordedOutcome, outcomeMessage, DEFAULT_DEADLINE_SECS, MAX_DEADLINE_SECS } from './client.js';
export type { LedgerOptions, RetryOptions, ProtectedWriteOptions, ProtectedWriteOp, RecordedOutcome, LedgerTurn } from './client.js';
export { idempotencyKey, base32 } from './idempotency.js';
export { Completed, NotAccepted, Inconclusive, completed, notAccepted, inconclusive } from './status.js';
export type { StatusCheck, StatusCheckOp, StatusAnswer, ObservedAt, RecoverSummary } from './status.js';
export { LedgerError, LedgerConnectionError, LedgerSettleError, NotDispatched, ProviderFailed, ProtectedToolError, ProtectedToolUsageError } from './errors.js';
export type * from './types.js';
export type { paths, components, operations } from './generated/openapi.js';
