import { Ledger, ProviderFailed, completed, notAccepted, inconclusive } from 'outcomes-ledger';

// A payment provider that keeps idempotency keys: a repeated key returns the original charge, and
// GET /charges?idempotency_key=K answers with the charge made for K, or says it did not accept K.
const PAYMENTS = process.env.PAYMENTS_URL ?? 'https://payments.example.com';

// The status check: the provider's own record of THIS operation (its key), never a guess.
export async function chargeStatus(op) {
  const r = await fetch(`${PAYMENTS}/charges?idempotency_key=${op.idempotencyKey}`);
  if (r.status !== 200) return inconclusive({ why: `the provider answered ${r.status}` }); // 404 too: a search without it
  const charge = await r.json();
  if (charge.status === 'succeeded') return completed({ reference: charge.id, observedAt: charge.created_at });
  if (charge.status === 'not_accepted') return notAccepted({ reference: charge.idempotency_key, observedAt: charge.refused_at });
  return inconclusive({ why: `charge ${charge.id} is ${charge.status}` });
}
export const checks = { 'payments.charge': chargeStatus }; // for `npx outcomes-ledger recover --checks`

export const ledger = new Ledger({
  baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000',
  token: process.env.OUTCOMES_HOST_TOKEN,
  statusChecks: checks, // run 1 s after a charge ends unknown (then 2 s, 4 s later while it cannot tell)
});

export async function charge({ sessionKey, logicalTurnId, amount }) {
  return ledger.protectedWrite({ sessionKey, logicalTurnId, tool: 'payments.charge' }, async (op) => {
    const r = await fetch(`${PAYMENTS}/charges`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': op.idempotencyKey },
      body: JSON.stringify({ amount }),
    }); // a lost reply rejects here: settled outcome_unknown, then the status check reconciles it
    if (r.status === 402) throw new ProviderFailed(`declined: ${await r.text()}`);
    const made = await r.json();
    await op.attach({ id: made.id, title: `charge of ${amount}` });
    return made;
  });
}
