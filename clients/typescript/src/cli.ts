#!/usr/bin/env node
/**
 * `npx outcomes-ledger recover --checks ./checks.mjs (--session KEY ... | --all) [--base-url U] [--token T]`
 * (clients/typescript/README.md "Status checks"): runs `ledger.recover()` with the status checks of a
 * module, prints its summary as JSON. Exit codes (README "Status checks"): 0 the run is done (every open
 * unknown looked at); 1 the ledger could not be read or reached (the run stopped; the partial summary,
 * `incomplete: true`, is still printed); 2 a usage error (one line on stderr).
 *
 * The checks module exports them by tool name: `export default { pay: async (op) => … }`, or
 * `export const checks = { … }`, or else each exported function is the check of the tool it is named after.
 * A default export or `checks` export that is not a non-empty mapping of tool name to function is a
 * usage error (never a fall back to other exports).
 * The base URL and token default to the environment's BASE_URL and OUTCOMES_HOST_TOKEN.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ledger } from './client.js';
import type { StatusCheck } from './status.js';

const USAGE = `usage: outcomes-ledger recover --checks ./checks.mjs (--session KEY [--session KEY ...] | --all)
                       [--base-url URL] [--token TOKEN]
  --checks    a module exporting status checks by tool name (default export, a \`checks\` export, or named functions)
  --session   a session whose open unknowns to check (repeatable)
  --all       every session's open unknowns
  --base-url  the ledger (default $BASE_URL)
  --token     the host token (default $OUTCOMES_HOST_TOKEN)`;

function usage(message: string): never {
  process.stderr.write(`outcomes-ledger: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/** A usage error about the checks module: one line, no stack, exit 2. */
function badChecks(message: string): never {
  process.stderr.write(`outcomes-ledger: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  process.exit(2);
}

async function loadChecks(specifier: string): Promise<Record<string, StatusCheck>> {
  const url = /^[a-z][a-z0-9+.-]*:/i.test(specifier) && !/^[a-z]:[\\/]/i.test(specifier) ? specifier : pathToFileURL(resolve(specifier)).href;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    const what = code === 'ERR_MODULE_NOT_FOUND' ? 'cannot be found' : 'could not be loaded';
    badChecks(`--checks ${specifier} ${what}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  // A mapping of tool name to function: the default export when it is an object, else a `checks` export.
  const mapping = (name: string, value: unknown): Record<string, StatusCheck> => {
    if (!value || typeof value !== 'object' || Array.isArray(value)) {
      badChecks(`--checks ${specifier}: its ${name} is not a mapping of tool name to status check`);
    }
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) badChecks(`--checks ${specifier}: its ${name} has no status checks`);
    const bad = entries.filter(([, v]) => typeof v !== 'function').map(([k]) => JSON.stringify(k));
    if (bad.length > 0) badChecks(`--checks ${specifier}: in its ${name}, not a function: ${bad.join(', ')}`);
    return value as Record<string, StatusCheck>;
  };
  if (mod.default !== undefined && typeof mod.default !== 'function') return mapping('default export', mod.default);
  if (mod.checks !== undefined) return mapping('`checks` export', mod.checks);
  const named = Object.fromEntries(Object.entries(mod).filter(([k, v]) => k !== 'default' && typeof v === 'function')) as Record<string, StatusCheck>;
  if (Object.keys(named).length === 0) badChecks(`--checks ${specifier} exports no status checks`);
  return named;
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        checks: { type: 'string' },
        session: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        'base-url': { type: 'string' },
        token: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    usage(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (positionals[0] !== 'recover' || positionals.length !== 1) usage('the one command is recover');
  if (!values.checks) usage('--checks names the module of status checks');
  const sessions = values.session ?? [];
  if (values.all && sessions.length > 0) usage('give --session KEY ... or --all, not both');
  if (!values.all && sessions.length === 0) usage('give --session KEY (repeatable) or --all');
  const baseUrl = values['base-url'] ?? process.env.BASE_URL;
  const token = values.token ?? process.env.OUTCOMES_HOST_TOKEN;
  if (!baseUrl) usage('--base-url or BASE_URL names the ledger');
  if (!token) usage('--token or OUTCOMES_HOST_TOKEN is the host token');
  const checks = await loadChecks(values.checks);
  const ledger = new Ledger({ baseUrl, token });
  try {
    const summary = await ledger.recover({ sessions: values.all ? 'all' : sessions, checks });
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    if (summary.items.length === 0) {
      process.stderr.write(
        values.all
          ? 'outcomes-ledger recover: no open unknowns were found in any session\n'
          : `outcomes-ledger recover: no open unknowns were found in the given sessions (${sessions.join(', ')})\n`,
      );
    }
    return 0;
  } catch (error) {
    const partial = (error as { summary?: unknown })?.summary;
    if (partial) process.stdout.write(`${JSON.stringify(partial, null, 2)}\n`);
    process.stderr.write(
      `outcomes-ledger recover: the ledger at ${baseUrl} could not be read or reached` +
        `${partial ? ' (the run stopped; the rest not looked at)' : ''}: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
