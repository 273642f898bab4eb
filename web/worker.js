// The only code that calls the wasm module. Protocol (all messages are plain objects):
//   main → worker: {type:'init', module?}                 → {type:'ready', version, presets, module}
//                  {type:'estimate', id, scenario, plan}  → {type:'result', id, result}
//                  {type:'plan', id, scenario, options}   → {type:'progress', id, progress}* then {type:'result', id, result}
//                  {type:'merge', id, scenario, options, shards} → {type:'result', id, result}   (the slices of a
//                  search, plan results with options.shard_count, merged into one: web/split-search.js)
//                  {type:'validate', id, scenario, plan}  → {type:'result', id, result}
//                  {type:'advise', id, scenario, options}  → {type:'result', id, result}   (which changes make a plan fit)
//                  {type:'calibrate', id, scenario, runs} → {type:'result', id, result}   (runs: the RUNS.json text
//                  as the user gave it, so the core checks its syntax too; result {report, scenario} or {error})
//   errors inside the module come back as result = {error:{path, message, problems}}; a failure of
//   the worker itself as {type:'fatal', id, error:{name, message, stack}}.
// Cancelling a search = terminating this worker; the page starts a new one with the compiled module.
import createPoseidonModule from './poseidon.js';

const PROGRESS_INTERVAL_MS = 100;
let modP = null;
let compiled = null;

function load(module) {
  modP ??= (async () => {
    compiled = module instanceof WebAssembly.Module ? module : await compileModule();
    return createPoseidonModule({
      instantiateWasm(imports, done) {
        WebAssembly.instantiate(compiled, imports).then((instance) => done(instance, compiled));
        return {};
      },
    });
  })();
  return modP;
}

async function compileModule() {
  const url = new URL('poseidon.wasm', import.meta.url);
  const res = await fetch(url, { credentials: 'same-origin' });
  if (!res.ok) throw new Error(`could not load ${url.pathname}: HTTP ${res.status}`);
  if (WebAssembly.compileStreaming && (res.headers.get('content-type') || '').startsWith('application/wasm')) {
    return WebAssembly.compileStreaming(res);
  }
  return WebAssembly.compile(await res.arrayBuffer());
}

const parse = (text) => JSON.parse(text);

function runPlan(M, msg) {
  let last = 0;
  let pending = null;
  const flush = () => {
    if (pending) self.postMessage({ type: 'progress', id: msg.id, progress: parse(pending) });
    pending = null;
    last = performance.now();
  };
  let bestSeen = null;
  const onProgress = (text) => {
    try {
      pending = text;
      const now = performance.now();
      // always report a better plan at once (throttled to the interval otherwise)
      const m = /"best_iteration_time_s":\s*([-0-9.eE+]+|null)/.exec(text);
      const best = m ? m[1] : null;
      if (now - last >= PROGRESS_INTERVAL_MS || (best !== bestSeen && now - last >= 20)) {
        bestSeen = best;
        flush();
      }
    } catch {
      // never let a JS exception unwind through the C++ search
    }
    return true;
  };
  const out = M.plan(JSON.stringify(msg.scenario), JSON.stringify(msg.options || {}), onProgress);
  flush();
  return parse(out);
}

// The page's first search would otherwise run the module's code cold (each function compiled on
// first use, then optimised): a short search of the page's default scenario while the page still builds its
// inputs compiles the hot code first (issue 36 item 11). Its result is dropped.
const WARMUP_SCENARIO = { model: 'qwen3-30b-a3b', training: { global_batch_size: 1024 }, cluster: 'h100-plus-gb200' };
function warmUp(M) {
  try {
    M.plan(JSON.stringify(WARMUP_SCENARIO), JSON.stringify({ top: 1, time_limit_s: 0.15, baselines: false }), () => true);
  } catch {
    // a warm-up that fails changes nothing
  }
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  try {
    const M = await load(msg.type === 'init' ? msg.module : undefined);
    switch (msg.type) {
      case 'init':
        self.postMessage({ type: 'ready', version: M.version(), presets: parse(M.presets()), module: compiled });
        if (msg.warmup) warmUp(M);
        break;
      case 'estimate':
      case 'validate':
        self.postMessage({ type: 'result', id: msg.id, result: parse(M.estimate(JSON.stringify(msg.scenario), JSON.stringify(msg.plan))) });
        break;
      case 'plan':
        self.postMessage({ type: 'result', id: msg.id, result: runPlan(M, msg) });
        break;
      case 'merge':
        self.postMessage({ type: 'result', id: msg.id, result: parse(M.merge(JSON.stringify(msg.scenario), JSON.stringify(msg.options || {}), JSON.stringify(msg.shards))) });
        break;
      case 'advise': {
        const result = typeof M.advise === 'function'
          ? parse(M.advise(JSON.stringify(msg.scenario), JSON.stringify(msg.options || {})))
          : { error: { path: '', message: 'this version of the planner engine cannot give advice', problems: [] } };
        self.postMessage({ type: 'result', id: msg.id, result });
        break;
      }
      case 'calibrate': {
        const result = typeof M.calibrate === 'function'
          ? parse(M.calibrate(JSON.stringify(msg.scenario), typeof msg.runs === 'string' ? msg.runs : JSON.stringify(msg.runs)))
          : { error: { path: 'runs', message: 'this version of the planner engine cannot calibrate', problems: [] } };
        self.postMessage({ type: 'result', id: msg.id, result });
        break;
      }
      default:
        throw new Error(`unknown message type ${msg.type}`);
    }
  } catch (e) {
    self.postMessage({ type: 'fatal', id: msg.id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), stack: String(e?.stack ?? '') } });
  }
};
