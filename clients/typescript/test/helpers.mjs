// Shared by the node --test suite: the real `outcomes serve` (from BASE_URL / OUTCOMES_HOST_TOKEN,
// or one this suite starts from OUTCOMES_BIN), and reads of what the ledger published, made with
// plain fetch so that the client under test never checks itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, closeSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { randomUUID } from 'node:crypto';

export const OUTCOMES_BIN = process.env.OUTCOMES_BIN ?? '/work/wt/bin/outcomes';

/** A free loopback port (bound and released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitHealthy(baseUrl, child, ms = 15_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`outcomes serve exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${baseUrl}/healthz`);
      if (r.ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`outcomes serve at ${baseUrl} did not become healthy`);
}

/**
 * Start an `outcomes serve` this test owns: a free port, a temp data dir, a random host token.
 * `kill9()` kills it with SIGKILL, `restart()` starts it again on the same port and data dir.
 */
export async function startServer({ extraArgs = [] } = {}) {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'outcomes-ts-'));
  const token = `tok-${randomUUID()}`;
  const baseUrl = `http://127.0.0.1:${port}`;
  let child;
  const logFile = join(dataDir, 'server.log');
  const launch = async () => {
    const out = openSync(logFile, 'a');
    child = spawn(OUTCOMES_BIN, ['serve', '--addr', `127.0.0.1:${port}`, '--data-dir', dataDir, ...extraArgs], {
      env: { ...process.env, OUTCOMES_HOST_TOKEN: token },
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    await waitHealthy(baseUrl, child);
  };
  await launch();
  const exited = () => new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
  return {
    baseUrl,
    token,
    dataDir,
    port,
    log: () => readFileSync(logFile, 'utf8'),
    async kill9() {
      child.kill('SIGKILL');
      await exited();
    },
    async restart() {
      await launch();
    },
    /** For a server that lives as long as this test process: it no longer holds the event loop, and dies with it. */
    unrefUntilExit() {
      const kill = () => {
        try {
          child.kill('SIGKILL');
        } catch {}
        rmSync(dataDir, { recursive: true, force: true });
      };
      process.once('exit', kill);
      child.unref();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let shared;
/** The suite's server: BASE_URL + OUTCOMES_HOST_TOKEN when given (CI), else one started once from OUTCOMES_BIN. */
export async function sharedServer() {
  if (process.env.BASE_URL && process.env.OUTCOMES_HOST_TOKEN) {
    return { baseUrl: process.env.BASE_URL.replace(/\/+$/, ''), token: process.env.OUTCOMES_HOST_TOKEN, stop: async () => {} };
  }
  shared ??= startServer().then((s) => {
    s.unrefUntilExit();
    return s;
  });
  return shared;
}

/** A session key of its own for each test, so tests never see each other's entries. */
export function sessionKey(label) {
  return `ts-${label}-${randomUUID()}`;
}

async function getJson(server, path) {
  const r = await fetch(server.baseUrl + path, { headers: { Authorization: `Bearer ${server.token}` } });
  const body = await r.json();
  if (!r.ok) throw Object.assign(new Error(`GET ${path}: ${r.status} ${JSON.stringify(body)}`), { status: r.status, body });
  return body;
}

/** `GET /api/mutation-outcomes?session_id=` → the published records. */
export async function outcomes(server, key) {
  return (await getJson(server, `/api/mutation-outcomes?session_id=${encodeURIComponent(key)}`)).mutation_outcomes;
}

/** The turn's entries (`ledger_status` beside each record). */
export async function entries(server, key, turn) {
  const body = await getJson(
    server,
    `/api/sessions/${encodeURIComponent(key)}/turns/${encodeURIComponent(turn)}/entries`,
  );
  return body.entries;
}

/** Every change of one entry, oldest first (docs/api.md "Dashboard reads"). */
export async function history(server, key, mutationId) {
  return getJson(server, `/api/sessions/${encodeURIComponent(key)}/mutations/${encodeURIComponent(mutationId)}/history`);
}

/** The status of a read, for reads expected to fail. */
export async function readStatus(server, path) {
  const r = await fetch(server.baseUrl + path, { headers: { Authorization: `Bearer ${server.token}` } });
  await r.arrayBuffer();
  return r.status;
}

export function byMutation(records) {
  return Object.fromEntries(records.map((r) => [r.mutation_id, r]));
}
