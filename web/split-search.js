// The main search on every core (docs/web.md, "The pool for the main search"): the search split
// into slices (options.shard_index / shard_count, docs/search.md "Shards") run on the worker pool
// (web/pool.js), more slices than workers, each handed to the next free worker with the best
// threshold known then (options.prune_above_s: the K-th best key the finished slices found); the
// core then merges the slices (worker.js 'merge') into exactly the result of the single search:
// the same plans, order and scores. A synchronous wasm call cannot read messages, so the
// threshold travels between calls, never into one. Pure (no DOM): tested in node with fake workers.

/**
 * slices per worker: later slices start with a better threshold, and a slow one is not the last;
 * but every slice builds the cost tables again (and the first ones dive the whole space), so on
 * short searches 4 per worker lost to 2 (tests/web/bench-search.mjs, docs/web.md)
 */
export const SLICES_PER_WORKER = 2;
/** a slice is not started with less time than this left (it is left out: the result is incomplete) */
export const MIN_SLICE_S = 0.02;
/**
 * the search first runs whole (one slice of 1) for this long: most searches end sooner, and slices
 * would only add work to them; a longer one hands its plans' K-th key to the slices
 */
export const PROBE_S = 0.5;

/**
 * the core's range of options.time_limit_s (core/src/search_io.cpp: > 0, at least 1e-9, and <= 86400). A value
 * outside it (0, -1, text the field could not read as a number) is not split: the slices' own
 * limits would be computed from it (NaN goes to JSON as null) and the core would judge those, not
 * what was typed; run whole, the core's message names the value typed.
 */
export const MAX_TIME_LIMIT_S = 86400;
export const validTimeLimit = (v) => v === undefined || (typeof v === 'number' && Number.isFinite(v) && v >= 1e-9 && v <= MAX_TIME_LIMIT_S);

export const sliceCount = (workers) => Math.max(1, Math.floor(workers) || 1) * SLICES_PER_WORKER;

/** the k-th smallest key (Infinity while fewer than k): plans above it cannot enter the top k */
export function kthKey(keys, k) {
  if (keys.length < k) return Infinity;
  return [...keys].sort((a, b) => a - b)[k - 1];
}

/** the options of slice `index` of `count`: no baselines (the merge computes them), the time left */
export function sliceOptions(options, { index, count, threshold, timeLimitS }) {
  const o = { ...options, baselines: false, shard_index: index, shard_count: count, time_limit_s: timeLimitS };
  delete o.prune_above_s;
  if (Number.isFinite(threshold)) o.prune_above_s = threshold;
  return o;
}

/**
 * The search's progress from its slices': counts of the finished ones (`done`) plus the latest
 * report of each running one; the best plan seen so far (most tokens/s: the search's ranking).
 */
export function combineProgress(done, running, best, elapsed_s) {
  let evaluated = done.evaluated;
  let pruned = done.pruned;
  for (const p of running) {
    evaluated += p.evaluated ?? 0;
    pruned += p.pruned ?? 0;
  }
  return { evaluated, pruned, elapsed_s, best_iteration_time_s: best?.iteration_time_s ?? null, best: best ?? null };
}

const better = (a, b) => !b || (a && a.tokens_per_s > b.tokens_per_s);

/**
 * Runs the search of `scenario` with `options` on `pool` ({size, run(msg, onProgress, tag),
 * cancel(tag), warm?()}): whole for probeS seconds (one slice of 1, and the merges, through
 * runFirst: the page's own worker, warm already; complete: merged alone), else as
 * sliceCount(pool.size) slices on the pool (started once the whole run has taken half of
 * probeS), merged with the whole run.
 * Resolves to the plan result (or a slice's {error}: bad inputs fail every slice alike); rejects
 * when a worker fails or the jobs of `tag` are cancelled. onProgress gets the shape of worker.js's progress.
 */
export function splitSearch({ pool, scenario, options, onProgress = null, tag = 'search', now = () => performance.now(), probeS = PROBE_S,
  runFirst = (msg, progress) => pool.run(msg, progress, tag) }) {
  // a time limit the core refuses: one call with the options as given, so its message names the value
  if (!validTimeLimit(options.time_limit_s)) return runFirst({ type: 'plan', scenario, options }, onProgress);
  const k = options.top ?? 3; // the core's default
  const limitS = options.time_limit_s ?? 10;
  const reserveS = Math.min(0.15 * limitS, 1); // the single search keeps as much for its result
  const count = sliceCount(pool.size);
  const t0 = now();
  const elapsed = () => (now() - t0) / 1000;
  const shards = [];
  const keys = [];
  const done = { evaluated: 0, pruned: 0 };
  const live = new Map(); // slice index -> its latest progress
  let best = null;
  let next = 0;
  let running = 0;
  let over = false;
  const report = () => onProgress?.(combineProgress(done, live.values(), best, elapsed()));

  let probeBound = Infinity;
  let stopped = null; // the first whole run, stopped: merged with the slices (the core counts its plans once)
  const merge = (list) => runFirst({ type: 'merge', scenario, options: { ...options, time_limit_s: Math.max(limitS - elapsed(), MIN_SLICE_S) }, shards: list }, null)
    .then((res) => {
      if (res?.error) return res;
      const n = list.at(-1).shard.count;
      res.stats = { ...res.stats, elapsed_s: elapsed(), workers: n > 1 ? pool.size : 1, slices: n };
      return res;
    });
  // a short time limit leaves the slices' repeated work no time to pay off: the search runs whole
  const whole = limitS < 4 * probeS;
  const probeLimitS = whole ? limitS - reserveS / 2 : Math.min(probeS, limitS - reserveS);
  if (probeLimitS < MIN_SLICE_S) return slices();
  // the pool's workers start only for a big search: one still running at half the probe (a
  // small search, like the first one of the page, ends on the one warm worker with no other
  // worker competing for the cores: issue 36 item 11)
  const warmTimer = whole || !pool.warm ? 0 : setTimeout(() => pool.warm(), 500 * probeLimitS);
  const probe = { type: 'plan', scenario, options: sliceOptions(options, { index: 0, count: 1, threshold: Infinity, timeLimitS: probeLimitS }) };
  return runFirst(probe, (p) => {
    live.set(-1, p);
    if (better(p.best, best)) best = p.best;
    report();
  }).finally(() => clearTimeout(warmTimer)).then((res) => {
    live.delete(-1);
    if (res?.error || !res?.shard) return res?.error ? res : { error: { path: '', message: 'the search returned no result', problems: [] } };
    if (res.stats?.complete || whole) return merge([res]);
    stopped = res;
    done.evaluated += res.stats?.evaluated ?? 0;
    done.pruned += res.stats?.pruned ?? 0;
    // its K-th key bounds the slices; kept apart from the slices' keys: they find the same plans
    // again, and the K-th key must be of K distinct plans. Its plans join the merge: if time runs
    // out before the slices do better, the result still has them (as the single search would)
    probeBound = kthKey(res.found.map((f) => f.key), k);
    return slices();
  });

  function slices() {
    return new Promise((resolve, reject) => {
      const stop = (fn, value) => {
        if (over) return;
        over = true;
        if (running) pool.cancel(tag);
        fn(value);
      };
      const finish = () => {
        over = true;
        merge(stopped ? [stopped, ...shards] : shards).then(resolve, reject);
      };
      const launch = () => {
        while (!over && running < pool.size && next < count) {
          const timeLimitS = limitS - elapsed() - reserveS;
          // out of time: the slices not started are left out (the merge says the result is incomplete)
          if (timeLimitS < MIN_SLICE_S && (stopped || shards.length + running > 0)) { next = count; break; }
          const index = next++;
          running++;
          const msg = { type: 'plan', scenario, options: sliceOptions(options, { index, count, threshold: Math.min(probeBound, kthKey(keys, k)), timeLimitS: Math.max(timeLimitS, MIN_SLICE_S) }) };
          pool.run(msg, (p) => {
            if (over) return;
            live.set(index, p);
            if (better(p.best, best)) best = p.best;
            report();
          }, tag).then((res) => {
            running--;
            if (over) return;
            if (res?.error || !res?.shard) { stop(resolve, res?.error ? res : { error: { path: '', message: 'a search slice returned no result', problems: [] } }); return; }
            live.delete(index);
            done.evaluated += res.stats?.evaluated ?? 0;
            done.pruned += res.stats?.pruned ?? 0;
            shards.push(res);
            for (const f of res.found) keys.push(f.key);
            report();
            launch();
          }, (e) => {
            running--;
            stop(reject, e);
          });
        }
        if (!over && running === 0 && next >= count) finish();
      };
      launch();
    });
  }
}
