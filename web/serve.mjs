#!/usr/bin/env node
// Static server for the built site, on 127.0.0.1 only. No dependencies.
//   node web/serve.mjs [DIR=build-wasm/site] [PORT=8080] [--csp]
// --csp adds the strict Content-Security-Policy header the page is tested under.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

export const STRICT_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.wasm': 'application/wasm', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.webmanifest': 'application/manifest+json', '.txt': 'text/plain; charset=utf-8',
};

/** Starts a server; resolves to {server, port, url}. port 0 = any free port. */
export function serve(dir, { port = 0, csp = false, host = '127.0.0.1' } = {}) {
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
  const [dir = 'build-wasm/site', port = '8080'] = args.filter((a) => !a.startsWith('--'));
  if (!fs.existsSync(path.join(dir, 'index.html'))) {
    console.error(`${dir}/index.html not found: build the site first (emcmake cmake -S . -B build-wasm && cmake --build build-wasm)`);
    process.exit(1);
  }
  const { url } = await serve(dir, { port: Number(port), csp });
  console.log(`Poseidon planner: ${url}  (serving ${path.resolve(dir)}${csp ? ', strict CSP' : ''}; Ctrl+C to stop)`);
}
