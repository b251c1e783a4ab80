import { Ledger } from 'outcomes-ledger';

// Your side effect (here a stand-in): it creates a dashboard at a provider and says what it made.
async function createDashboard({ title }) {
  return { id: 'dash-7f3a', url: 'https://app.example.com/d/dash-7f3a', title };
}

const ledger = new Ledger({ baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000', token: process.env.OUTCOMES_HOST_TOKEN });
await ledger.protectedWrite({ sessionKey: 'chat-42', logicalTurnId: 'turn-1', mutationId: 'op-1', tool: 'mcp__dashboards__create' }, async (op) => {
  const dashboard = await createDashboard({ title: 'Service overview' });
  await op.attach({ id: dashboard.id, url: dashboard.url, title: dashboard.title });
});
