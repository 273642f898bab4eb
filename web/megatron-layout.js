// How a plan's layers split over pipeline stages and their chunks, in Megatron-LM's flags: an even
// split, --decoder-first/last-pipeline-num-layers, the account-for-embedding/loss flags, or
// Megatron-Core's --pipeline-model-parallel-layout (docs/web.md, "Exports"). Split out of
// megatron.js, which assembles the whole command.

const uniq = (xs) => [...new Set(xs)];

/**
 * layers per stage → the layout string of --pipeline-model-parallel-layout (E embedding, t layer,
 * m MTP layer, L loss). With V virtual stages every stage's layers split into V chunks (the plan's
 * chunk_layers per stage where given, else V equal ones), listed as Megatron-Core wants: all stages
 * of virtual rank 0, then of virtual rank 1, ... (megatron-args.md). A chunk may be empty ("E"
 * alone, "L" alone, ""). The model's MTP layers go before the loss in the last chunk, where the
 * core costs them (docs/formats.md, mtp_layers).
 */
export function pipelineLayout(layers, virtual = 1, chunks = null, mtp = 0) {
  const p = layers.length;
  const out = [];
  for (let v = 0; v < virtual; v++) {
    for (let i = 0; i < p; i++) {
      const first = v === 0 && i === 0;
      const last = v === virtual - 1 && i === p - 1;
      const n = Array.isArray(chunks?.[i]) ? chunks[i][v] : layers[i] / virtual;
      out.push(`${first ? 'E' : ''}${'t'.repeat(n)}${last ? `${'m'.repeat(mtp)}L` : ''}`);
    }
  }
  return out.join('|');
}

/**
 * The account-for flags that reproduce a plan's chunks, or null: Megatron-Core counts the embedding
 * (--account-for-embedding-in-pipeline-split) and the loss (--account-for-loss-in-pipeline-split)
 * as one layer each and splits the total evenly over the P × V chunks, so the first chunk holds one
 * layer less, the last one too (Megatron-Bridge's Llama 3.1 405B recipes: 126 + 2 = 128).
 */
export function accountForFlags(chunks, virtual) {
  const p = chunks.length;
  const total = chunks.flat().reduce((a, b) => a + b, 0);
  for (const [e, l] of [[1, 1], [1, 0], [0, 1]]) {
    if ((total + e + l) % (p * virtual)) continue;
    const u = (total + e + l) / (p * virtual);
    const fits = chunks.every((cs, s) => cs.every((n, c) => n === u - (e && s === 0 && c === 0 ? 1 : 0) - (l && s === p - 1 && c === virtual - 1 ? 1 : 0)));
    if (!fits) continue;
    const flags = [];
    if (e) flags.push(['--account-for-embedding-in-pipeline-split']);
    if (l) flags.push(['--account-for-loss-in-pipeline-split']);
    return flags;
  }
  return null;
}

/** the even split nearest to a plan's layers: PP stages of L/PP, or first/last stages that take the remainder */
export function nearestEvenSplit(numLayers, pp) {
  if (pp <= 1) return { layers: [numLayers], flags: [] };
  if (numLayers % pp === 0) return { layers: Array(pp).fill(numLayers / pp), flags: [] };
  const k = Math.floor(numLayers / pp);
  const rem = numLayers - k * pp;
  const first = k + Math.floor(rem / 2);
  const last = k + rem - Math.floor(rem / 2);
  const layers = [first, ...Array(pp - 2).fill(k), last];
  return { layers, flags: [['--decoder-first-pipeline-num-layers', first], ['--decoder-last-pipeline-num-layers', last]] };
}

/**
 * layer-split flags for a plan's per-stage layer counts (and, interleaved, its chunk_layers per
 * stage or null; the model's MTP layers for the layout): none (even), first/last flags, the
 * account-for flags, or the layout
 */
export function splitFlags(layers, virtual, chunks = null, mtp = 0) {
  const pp = layers.length;
  if (virtual > 1 && chunks) {
    const per = layers.map((n, i) => (Array.isArray(chunks[i]) ? chunks[i] : Array(virtual).fill(n / virtual)));
    if (per.every((cs) => cs.every(Number.isInteger)) && uniq(per.flat()).length > 1) {
      const account = accountForFlags(per, virtual);
      if (account) return { flags: account, kind: 'account' };
      return { flags: [['--pipeline-model-parallel-layout', pipelineLayout(layers, virtual, per, mtp)]], kind: 'layout', chunks: per };
    }
  }
  if (uniq(layers).length <= 1) return { flags: [], kind: 'even' };
  const middle = layers.slice(1, -1);
  // a stage with no layer only in the layout (Megatron-Core allows empty stages there: E||t|L)
  if (virtual <= 1 && !layers.includes(0) && (pp === 2 || uniq(middle).length === 1)) {
    const flags = [];
    if (pp === 2 || layers[0] !== middle[0]) flags.push(['--decoder-first-pipeline-num-layers', layers[0]]);
    if (pp === 2 || layers[pp - 1] !== middle[0]) flags.push(['--decoder-last-pipeline-num-layers', layers[pp - 1]]);
    return { flags, kind: 'first-last' };
  }
  if (virtual > 1) {
    // each chunk holds num_layers / V of its stage's blocks (docs/model.md, "Interleaved 1F1B")
    if (layers.some((n) => n % virtual)) return { flags: [], kind: 'unexpressed' };
    return { flags: [['--pipeline-model-parallel-layout', pipelineLayout(layers, virtual, null, mtp)]], kind: 'layout' };
  }
  return { flags: [['--pipeline-model-parallel-layout', pipelineLayout(layers, 1, null, mtp)]], kind: 'layout' };
}
