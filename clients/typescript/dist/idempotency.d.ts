/**
 * Idempotency keys (clients/typescript/README.md "Status checks"): `ol_` + the first 32 characters of
 * the lowercase RFC 4648 base32 of SHA-256 over the UTF-8 of `ledger_id`, a zero byte, `session_key`,
 * a zero byte and `mutation_id` (35 characters). Stable for an operation (the same from a restarted
 * host, the same for a fresh attempt after a confirmed `not_executed`) and distinct across ledgers.
 *
 * SHA-256 is WebCrypto's `crypto.subtle.digest` (browsers, Deno, Node 19+ as `globalThis.crypto`;
 * Node 18's `node:crypto` `webcrypto` when there is no global one), so the package has no Node-only import.
 */
/** RFC 4648 base32 (section 6), lowercase, without padding. */
export declare function base32(bytes: Uint8Array): string;
/**
 * The idempotency key of operation `(sessionKey, mutationId)` in the ledger `ledgerId` (its
 * `GET /api/host/ledger`): `ol_` + 32 lowercase base32 characters. The shared test vector is
 * `clients/idempotency-key-vectors.json`.
 */
export declare function idempotencyKey(ledgerId: string, sessionKey: string, mutationId: string): Promise<string>;
