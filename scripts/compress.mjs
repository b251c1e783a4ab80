// Writes `x.br` (brotli, quality 11, the largest window) beside each file named on the command line, with
// Node's zlib (the reference brotli library): the bundle is compressed once when it is built, and the server
// sends `x.br` (or `x.gz`, which scripts/build.sh makes with `gzip -9`) by the client's Accept-Encoding
// (server/src/assets.rs).
import { readFileSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants } from 'node:zlib';

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
  writeFileSync(`${file}.br`, br);
}
