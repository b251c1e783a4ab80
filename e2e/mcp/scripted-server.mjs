// A scripted MCP stdio server for the proxy's fault cases (e2e/mcp/long-lines.test.mjs): raw JSON-RPC
// lines, no SDK, so a test can make it answer with a line of any length or exit in the middle of a batch.
//
//   node e2e/mcp/scripted-server.mjs
//
// initialize: serverInfo.name "scripted". tools/list: `write` (no annotations: protected) and `read`
// (readOnlyHint: true). tools/call:
//   write {}                      answers a small result at once
//   write {noise: n}              first writes a notifications/message line of n bytes, then a small result
//   write {size: n}               answers with a result line of n bytes, its id written last (as the
//                                 TypeScript SDK writes answers)
//   write {hang: true}            never answered
//   write {exit: true}            exits 3 at once, answering nothing
//   write {delay: ms}             answers a small result after ms milliseconds
//   read {}                       never answered
// A batch line (a JSON array): writes the start of an answer to its first request, without a newline,
// and exits 3, answering nothing. Every line it writes over 1 MiB is
// reported on stderr as `scripted: wrote <bytes> bytes sha256 <hex>` (the hash of the line without its
// newline); every line it reads as `scripted: read <bytes> bytes`.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';

function write(text) {
  if (text.length > 1 << 20) {
    const sha = createHash('sha256').update(text).digest('hex');
    process.stderr.write(`scripted: wrote ${Buffer.byteLength(text)} bytes sha256 ${sha}\n`);
  }
  process.stdout.write(`${text}\n`);
}

/** A JSON string's content of exactly `n` bytes: text with quotes, braces and escapes that spell an id. */
function filler(n) {
  const unit = `${'a'.repeat(1000)} \\"{\\"id\\":1,\\"result\\":{}}\\" [\\\\] `;
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n).replace(/\\+$/, (m) => (m.length % 2 ? `${m.slice(1)}b` : m));
}

/** A line of exactly `n` bytes: `prefix` + a string member padded to fit + `suffix`. */
function line(n, prefix, suffix) {
  const fixed = Buffer.byteLength(prefix) + Buffer.byteLength(suffix);
  return `${prefix}${filler(n - fixed)}${suffix}`;
}

const tools = [
  { name: 'write', description: 'writes', inputSchema: { type: 'object' } },
  { name: 'read', description: 'reads', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
];

const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on('line', (text) => {
  process.stderr.write(`scripted: read ${Buffer.byteLength(text)} bytes\n`);
  const m = JSON.parse(text);
  if (Array.isArray(m)) {
    process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(m[0].id)},"result":{"content":[`, () => process.exit(3));
    return;
  }
  if (m.method === 'initialize') {
    write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } }));
  } else if (m.method === 'tools/list') {
    write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools } }));
  } else if (m.method === 'tools/call' && m.params.name === 'write') {
    const { noise, size, hang, exit, delay } = m.params.arguments ?? {};
    if (hang) return;
    if (exit) process.exit(3);
    if (delay) {
      setTimeout(() => write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'written late' }] } })), delay);
      return;
    }
    if (noise) write(line(noise, '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"', '"}}'));
    if (size) write(line(size, '{"result":{"content":[{"type":"text","text":"', `"}]},"jsonrpc":"2.0","id":${JSON.stringify(m.id)}}`));
    else write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'written' }] } }));
  } else if (m.method === 'ping') {
    write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }));
  }
});
input.on('close', () => process.exit(0));
