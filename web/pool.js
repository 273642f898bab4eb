// A pool of workers for many independent jobs (the what-if searches: one scenario per job; the
// slices of the main search, web/split-search.js).
// Each worker loads the wasm module once (the page hands it the module it already compiled) and
// then takes one job at a time; jobs wait in a queue, first in, first out. A single-threaded
// search cannot read messages, so cancelling terminates the busy workers (idle ones are kept) and
// later jobs start fresh ones. No SharedArrayBuffer: jobs and results are plain messages.
// The pool knows nothing of the page: spawn() makes a worker-like object ({postMessage,
// terminate, onmessage, onerror}) speaking web/worker.js's protocol, so node tests can fake it.

/** at most this many workers, however many cores: each holds its own copy of the module's memory */
export const MAX_POOL = 8;

/** workers for navigator.hardwareConcurrency cores: min(cores, MAX_POOL), at least 1 */
export function poolSize(cores) {
  const n = Math.floor(Number(cores));
  return Math.max(1, Math.min(Number.isFinite(n) ? n : 1, MAX_POOL));
}

export function cancelledError() {
  const err = new Error('cancelled');
  err.cancelled = true;
  return err;
}

export class WorkerPool {
  /**
   * size: the most workers at once; spawn(): a new worker; init(): its first message (e.g.
   * {type: 'init', module}), answered by {type: 'ready'} before it gets a job.
   */
  constructor({ size, spawn, init = () => ({ type: 'init' }) }) {
    this.size = Math.max(1, Math.floor(size) || 1);
    this.spawn = spawn;
    this.init = init;
    this.slots = []; // {worker, ready: bool, job: null | job}
    this.queue = []; // jobs not started: {msg, resolve, reject, onProgress}
    this.seq = 0;
    this.spawned = 0; // workers started in all (tests, the page's status line)
  }

  /**
   * runs msg (a worker.js request without id) on a free worker; resolves to its result. tag: the
   * jobs' owner, for cancel(tag) (the what-if box and the main search share the pool)
   */
  run(msg, onProgress, tag = null) {
    return new Promise((resolve, reject) => {
      this.queue.push({ msg, resolve, reject, onProgress, tag });
      this.dispatch();
    });
  }

  /** rejects every queued and running job (err.cancelled), terminating the busy workers */
  cancelAll() {
    this.cancel(undefined);
  }

  /** the same for the jobs of one tag (undefined: all of them) */
  cancel(tag) {
    const err = cancelledError();
    const mine = (job) => tag === undefined || job.tag === tag;
    for (const job of this.queue.filter(mine)) job.reject(err);
    this.queue = this.queue.filter((job) => !mine(job));
    for (const slot of [...this.slots]) {
      if (!slot.job || !mine(slot.job)) continue;
      const job = slot.job;
      slot.job = null;
      this.drop(slot);
      job.reject(err);
    }
    if (this.queue.length) this.dispatch(); // other owners' jobs get workers in place of the dropped ones
  }

  /** starts the missing workers now (they load the module and wait): jobs soon to come start at once */
  warm() {
    while (this.slots.length < this.size) this.add();
  }

  /** terminates every worker (queued jobs are rejected) */
  close() {
    this.cancelAll();
    for (const slot of [...this.slots]) this.drop(slot);
  }

  /** {size, workers, busy, queued, spawned} */
  status() {
    return { size: this.size, workers: this.slots.length, busy: this.slots.filter((s) => s.job).length, queued: this.queue.length, spawned: this.spawned };
  }

  dispatch() {
    for (const slot of this.slots) {
      if (!this.queue.length) return;
      if (slot.ready && !slot.job) this.start(slot, this.queue.shift());
    }
    // more jobs than ready workers: start workers up to the size (the ones starting count as free)
    const starting = this.slots.filter((s) => !s.ready).length;
    let want = Math.min(this.queue.length - starting, this.size - this.slots.length);
    while (want-- > 0) this.add();
  }

  start(slot, job) {
    job.id = ++this.seq;
    slot.job = job;
    slot.worker.postMessage({ ...job.msg, id: job.id });
  }

  add() {
    const worker = this.spawn();
    const slot = { worker, ready: false, job: null };
    this.slots.push(slot);
    this.spawned++;
    worker.onmessage = (ev) => this.onMessage(slot, ev.data);
    worker.onerror = (ev) => {
      ev?.preventDefault?.();
      this.fail(slot, new Error(`a pool worker failed: ${ev?.message || 'worker error'}`));
    };
    worker.postMessage(this.init());
  }

  onMessage(slot, msg) {
    if (!this.slots.includes(slot)) return; // terminated meanwhile
    if (msg?.type === 'ready') {
      slot.ready = true;
      this.dispatch();
      return;
    }
    const job = slot.job;
    if (!job || msg?.id !== job.id) return;
    if (msg.type === 'progress') {
      job.onProgress?.(msg.progress);
    } else if (msg.type === 'result') {
      slot.job = null;
      job.resolve(msg.result);
      this.dispatch();
    } else if (msg.type === 'fatal') {
      this.fail(slot, new Error(msg.error?.message ?? 'worker failure'));
    }
  }

  /** a worker broke: its job fails, the worker goes, the queue goes on with the others (or a new one) */
  fail(slot, err) {
    const job = slot.job;
    slot.job = null;
    this.drop(slot);
    if (job) job.reject(err);
    else for (const j of this.queue.splice(0)) j.reject(err); // it broke while loading: the others would too
    this.dispatch();
  }

  drop(slot) {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    try { slot.worker.terminate(); } catch { /* already gone */ }
  }
}
