/**
 * Idempotency keys (clients/typescript/README.md "Status checks"): `ol_` + the first 32 characters of
 * the lowercase RFC 4648 base32 of SHA-256 over the UTF-8 of `ledger_id`, a zero byte, `session_key`,
 * a zero byte and `mutation_id` (35 characters). Stable for an operation (the same from a restarted
 * host, the same for a fresh attempt after a confirmed `not_executed`) and distinct across ledgers.
 *
 * SHA-256 is WebCrypto's `crypto.subtle.digest` (browsers, Deno, Node 19+ as `globalThis.crypto`;
 * Node 18's `node:crypto` `webcrypto` when there is no global one), so the package has no Node-only import.
 */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** RFC 4648 base32 (section 6), lowercase, without padding. */
export function base32(bytes) {
    let out = '';
    let buffer = 0;
    let bits = 0;
    for (const byte of bytes) {
        buffer = (buffer << 8) | byte;
        bits += 8;
        while (bits >= 5) {
            out += ALPHABET[(buffer >>> (bits - 5)) & 31];
            bits -= 5;
        }
        buffer &= (1 << bits) - 1;
    }
    if (bits > 0)
        out += ALPHABET[(buffer << (5 - bits)) & 31];
    return out;
}
let subtle;
function subtleCrypto() {
    subtle ??= (async () => {
        const global = globalThis.crypto;
        if (global?.subtle)
            return global.subtle;
        // Node 18 has WebCrypto only as node:crypto's webcrypto (a specifier in a variable: bundlers for
        // browsers leave it alone, and browsers never reach this line).
        const specifier = 'node:crypto';
        const mod = (await import(specifier));
        if (!mod.webcrypto?.subtle)
            throw new Error('outcomes-ledger: no WebCrypto (crypto.subtle) to derive idempotency keys');
        return mod.webcrypto.subtle;
    })();
    return subtle;
}
/**
 * The idempotency key of operation `(sessionKey, mutationId)` in the ledger `ledgerId` (its
 * `GET /api/host/ledger`): `ol_` + 32 lowercase base32 characters. The shared test vector is
 * `clients/idempotency-key-vectors.json`.
 */
export async function idempotencyKey(ledgerId, sessionKey, mutationId) {
    const encoder = new TextEncoder();
    const parts = [encoder.encode(ledgerId), encoder.encode(sessionKey), encoder.encode(mutationId)];
    const data = new Uint8Array(parts[0].length + parts[1].length + parts[2].length + 2);
    data.set(parts[0], 0);
    data.set(parts[1], parts[0].length + 1);
    data.set(parts[2], parts[0].length + parts[1].length + 2);
    const digest = new Uint8Array(await (await subtleCrypto()).digest('SHA-256', data));
    return `ol_${base32(digest).slice(0, 32)}`;
}
