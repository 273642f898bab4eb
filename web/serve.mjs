#!/usr/bin/env node
// Static server for the built site, on 127.0.0.1 only. No dependencies.
//   node web/serve.mjs [DIR=build-wasm/site] [PORT=8080] [--csp] [--gzip | --no-compress]
// --csp adds the strict Content-Security-Policy header the page is tested under. Text and wasm
// files go out compressed (brotli or gzip, as the browser accepts; --gzip: gzip only; compressed
// once per file version and kept): the module is 1.1 MB raw, 0.3-0.4 MB compressed (issue 36 item 11).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export const STRICT_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.webmanifest': 'application/manifest+json', '.txt': 'text/plain; charset=utf-8',
};

const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.wasm', '.svg', '.webmanifest', '.txt']);
const packed = new Map(); // `${encoding} ${file}` → {mtimeMs, size, body} (body null while brotli is being made)

/**
 * the file compressed with `encoding` ('br' or 'gzip'), made once per file version, or null when
 * not ready: gzip -9 is made at once (~70 ms for the 1.1 MB module); brotli at quality 11 (25 %
 * smaller than gzip on the module, but seconds of work) in the background, gzip until it is ready
 */
function compressed(file, st, encoding) {
  const key = `${encoding} ${file}`;
  const hit = packed.get(key);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.body;
  const raw = fs.readFileSync(file);
  if (encoding === 'gzip') {
    const body = zlib.gzipSync(raw, { level: 9 });
    packed.set(key, { mtimeMs: st.mtimeMs, size: st.size, body });
    return body;
  }
  const entry = { mtimeMs: st.mtimeMs, size: st.size, body: null };
  packed.set(key, entry);
  zlib.brotliCompress(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } },
    (err, body) => { if (err) packed.delete(key); else entry.body = body; });
  return null;
}

/** the encoding to send: brotli, else gzip, when the request accepts it (q=0 refuses) */
export function pickEncoding(accept = '') {
  const ok = (name) => new RegExp(`(^|,)\\s*${name}\\s*(;\\s*q=(?!0(\\.0*)?\\s*(,|$))[0-9.]+)?\\s*(,|$)`).test(accept);
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : null;
}

/**
 * Starts a server; resolves to {server, port, url}. port 0 = any free port. compress: 'gzip' (the
 * default: made at once), 'br' (brotli where accepted, made in the background, gzip meanwhile: the
 * command line's default) or false: text and wasm files go out compressed to a browser that takes it.
 */
export function serve(dir, { port = 0, csp = false, host = '127.0.0.1', compress = 'gzip' } = {}) {
  const root = path.resolve(dir);
  const server = http.createServer((req, res) => {
    let rel;
    try {
      rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end('bad request');
      return;
    }
    let file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root)) { res.writeHead(403).end('forbidden'); return; }
    if (rel.endsWith('/')) file = path.join(file, 'index.html');
    fs.stat(file, (err, st) => {
      if (err || !st.isFile()) { res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found'); return; }
      const headers = { 'Content-Type': MIME[path.extname(file)] ?? 'application/octet-stream', 'Content-Length': st.size, 'Cache-Control': 'no-cache' };
      if (csp) headers['Content-Security-Policy'] = STRICT_CSP;
      const accept = String(req.headers['accept-encoding'] ?? '');
      let encoding = compress && COMPRESSIBLE.has(path.extname(file)) ? pickEncoding(compress === 'br' ? accept : accept.replace(/\bbr\b[^,]*/g, 'x')) : null;
      let body = null;
      if (encoding) {
        try {
          body = compressed(file, st, encoding);
          // brotli still being made: gzip meanwhile, if the browser takes it
          if (!body && encoding === 'br' && pickEncoding(accept.replace(/\bbr\b[^,]*/g, 'x')) === 'gzip') {
            encoding = 'gzip';
            body = compressed(file, st, 'gzip');
          }
        } catch { res.writeHead(500).end('could not read the file'); return; }
        if (!body) encoding = null;
      }
      if (encoding) {
        Object.assign(headers, { 'Content-Encoding': encoding, 'Content-Length': body.length, Vary: 'Accept-Encoding' });
        res.writeHead(200, headers);
        res.end(req.method === 'HEAD' ? undefined : body);
        return;
      }
      res.writeHead(200, headers);
      if (req.method === 'HEAD') { res.end(); return; }
      fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const p = server.address().port;
      resolve({ server, port: p, url: `http://${host}:${p}/` });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('serve.mjs')) {
  const args = process.argv.slice(2);
  const csp = args.includes('--csp');
  const compress = args.includes('--no-compress') ? false : args.includes('--gzip') ? 'gzip' : 'br';
  const [dir = 'build-wasm/site', port = '8080'] = args.filter((a) => !a.startsWith('--'));
  if (!fs.existsSync(path.join(dir, 'index.html'))) {
    console.error(`${dir}/index.html not found: build the site first (emcmake cmake -S . -B build-wasm && cmake --build build-wasm)`);
    process.exit(1);
  }
  const { url } = await serve(dir, { port: Number(port), csp, compress });
  console.log(`Poseidon planner: ${url}  (serving ${path.resolve(dir)}${csp ? ', strict CSP' : ''}${compress ? ', compressed' : ''}; Ctrl+C to stop)`);
}
