// Writes `x.br` (brotli, quality 11, the largest window) and `x.gz` (gzip, level 9) beside each file named
// on the command line: the bundle is compressed once when it is built, and the server sends these twins
// by the client's Accept-Encoding (server/src/assets.rs). Node's zlib is the reference brotli and zlib.
import { readFileSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

for (const file of process.argv.slice(2)) {
  const raw = readFileSync(file);
  const mode = file.endsWith('.wasm') ? constants.BROTLI_MODE_GENERIC : constants.BROTLI_MODE_TEXT;
  const br = brotliCompressSync(raw, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_MODE]: mode,
      [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  });
  const gz = gzipSync(raw, { level: 9 });
  writeFileSync(`${file}.br`, br);
  writeFileSync(`${file}.gz`, gz);
}
