// The client side of the worker protocol (web/worker.js): spawn, call, cancel by restart; and the
// pool of workers for many independent searches (web/pool.js), started with the compiled module.
import { WorkerPool, poolSize } from './pool.js';

export let worker = null;
export let ready = null;
export let compiledModule = null;
export let seq = 0;
export const pending = new Map(); // id → {resolve, reject, onProgress}

export function spawnWorker({ warmup = false } = {}) {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  ready = new Promise((resolve, reject) => {
    worker.onmessage = (ev) => {
      const msg = ev.data;
      if (msg.type === 'ready') {
        if (msg.module) compiledModule = msg.module;
        resolve(msg);
        return;
      }
      const p = pending.get(msg.id);
      if (msg.type === 'progress') {
        p?.onProgress?.(msg.progress);
      } else if (msg.type === 'result') {
        pending.delete(msg.id);
        p?.resolve(msg.result);
      } else if (msg.type === 'fatal') {
        console.error('planner engine failure:', msg.error.stack || msg.error.message);
        if (!p) { reject(new Error(msg.error.message)); return; }
        pending.delete(msg.id);
        p.reject(new Error(msg.error.message));
      }
    };
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      const err = new Error(`The planner engine failed to load: ${ev.message || 'worker error'}`);
      reject(err);
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    };
  });
  worker.postMessage({ type: 'init', module: compiledModule, warmup });
  return ready;
}

let firstView = null;
/**
 * The default inputs' search result, made when the site was built by this same module
 * (web/first-view.mjs writes first-view.json): a plain visit shows it at once, before the engine
 * is ready, and the engine's own search of the same inputs replaces it (issue 36 item 11).
 * Resolves to null without it (a link, an embed, a build without node, any failure).
 */
export function loadFirstView() {
  firstView ??= (async () => {
    if (globalThis.location?.hash || new URLSearchParams(globalThis.location?.search ?? '').has('embed')) return null;
    try {
      const res = await fetch(new URL('./first-view.json', import.meta.url), { credentials: 'same-origin' });
      const fv = res.ok ? await res.json() : null;
      return fv?.format === 1 && fv.result?.plans?.length ? fv : null;
    } catch {
      return null;
    }
  })();
  return firstView;
}

/** the engine's worker, started once: boot.js starts it early, main.js waits for it; it warms the
 * module's code up with a short search unless the page opens a link */
export function startEngine() {
  // a link opens a plan (an estimate), not a search: no warm-up to wait behind (worker.js)
  return ready ?? spawnWorker({ warmup: !globalThis.location?.hash });
}

export async function call(msg, onProgress) {
  await ready;
  const id = ++seq;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject, onProgress });
    worker.postMessage({ ...msg, id });
  });
}

export function restartWorker() {
  worker?.terminate();
  const err = new Error('cancelled');
  err.cancelled = true;
  for (const p of pending.values()) p.reject(err);
  pending.clear();
  return spawnWorker();
}

let pool = null;
/** the worker pool (min(cores, 8) workers, started when jobs come); each loads the module compiled once */
export function getPool() {
  pool ??= new WorkerPool({
    // ?workers=N (at most 8) sets the size, for benchmarks: tests/web/bench-whatif.mjs
    size: poolSize(new URLSearchParams(globalThis.location?.search ?? '').get('workers') ?? globalThis.navigator?.hardwareConcurrency),
    spawn: () => new Worker(new URL('./worker.js', import.meta.url), { type: 'module' }),
    init: () => ({ type: 'init', module: compiledModule }),
  });
  return pool;
}
