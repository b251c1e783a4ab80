// `outcomes mcp-proxy` forwards the MCP handshake and `tools/list` unchanged: the official MCP TypeScript
// SDK's client sees exactly what the real server answers, byte for byte, and nothing is recorded.
//
// Run by scripts/test.sh (`node --test e2e/mcp/`). Alone, against a server of your own:
//   OUTCOMES_HOST_TOKEN=t target/debug/outcomes serve --addr 127.0.0.1:3350 --data-dir "$(mktemp -d)" &
//   BASE_URL=http://127.0.0.1:3350 OUTCOMES_HOST_TOKEN=t OUTCOMES_BIN=target/debug/outcomes node --test e2e/mcp/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import {
  EVERYTHING_NAME, FILESYSTEM_NAME, base, close, direct, everythingEntry, filesystemEntry, ledgerOf, proxied, sessionKey,
} from './support.mjs';

const annotations = (tools) => Object.fromEntries(tools.map((t) => [t.name, t.annotations?.readOnlyHint === true]));

test('the installed servers are what the proxy tests assume (names, read-only annotations)', async () => {
  const dir = await mkdtemp(`${tmpdir()}/mcp-fs-`);
  const fs = await direct(filesystemEntry, [dir]);
  const ev = await direct(everythingEntry);
  try {
    assert.equal(fs.client.getServerVersion().name, FILESYSTEM_NAME);
    assert.equal(ev.client.getServerVersion().name, EVERYTHING_NAME);
    const fsRo = annotations((await fs.client.listTools()).tools);
    // Read-only (forwarded without a record) and writing (protected) tools the tests call.
    assert.equal(fsRo.read_file, true);
    assert.equal(fsRo.read_text_file, true);
    assert.equal(fsRo.list_directory, true);
    assert.equal(fsRo.write_file, false);
    const evRo = annotations((await ev.client.listTools()).tools);
    assert.equal(evRo.echo, true);
    // Annotated read-only, so the tests protect it with --protect.
    assert.equal(evRo['trigger-long-running-operation'], true);
  } finally {
    await close(fs);
    await close(ev);
  }
});

for (const [label, entry, args] of [
  ['filesystem', filesystemEntry, 'dir'],
  ['everything', everythingEntry, null],
]) {
  test(`${label}: initialize and tools/list through the proxy are byte-equal to the direct server's; nothing recorded`, async () => {
    const serverArgs = args === 'dir' ? [await mkdtemp(`${tmpdir()}/mcp-fs-`)] : [];
    const session = sessionKey(`list-${label}`);
    const d = await direct(entry, serverArgs);
    const p = await proxied({ session, server: entry, serverArgs });
    try {
      const directList = await d.client.listTools();
      const proxiedList = await p.client.listTools();
      assert.deepEqual(proxiedList, directList);
      assert.ok(directList.tools.length >= 10, `${directList.tools.length} tools`);
      assert.deepEqual(p.client.getServerVersion(), d.client.getServerVersion());
      assert.deepEqual(p.client.getServerCapabilities(), d.client.getServerCapabilities());
      assert.equal(p.client.getInstructions(), d.client.getInstructions());

      // Same requests with the same ids on both sides, so the raw answers must be the same bytes.
      const initId = d.transport.requestId('initialize');
      const listId = d.transport.requestId('tools/list');
      assert.equal(p.transport.requestId('initialize'), initId);
      assert.equal(p.transport.requestId('tools/list'), listId);
      assert.equal(p.transport.rawResponse(initId), d.transport.rawResponse(initId));
      assert.equal(p.transport.rawResponse(listId), d.transport.rawResponse(listId));

      // The session line (its dashboard page) on the proxy's stderr.
      assert.ok(
        p.stderr().split('\n').includes(`outcomes mcp-proxy: session ${session}: ${base}/sessions/${session}`),
        `stderr: ${p.stderr()}`,
      );
      // The child's stderr passed through (its first line, written at start).
      const childLine = d.stderr().split('\n')[0];
      assert.ok(childLine.length > 0);
      assert.ok(p.stderr().split('\n').includes(childLine), `stderr: ${p.stderr()}`);
      assert.deepEqual(p.errors, []);
    } finally {
      await close(d);
      await close(p);
    }
    // The client closed stdin: the child exits, and the proxy with the child's status.
    assert.deepEqual(await p.transport.exited, await d.transport.exited);
    assert.equal(await ledgerOf(session), null);
  });
}
