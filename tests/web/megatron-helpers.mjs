// Helpers shared by the Megatron-LM export's tests that run the command (megatron.test.mjs,
// megatron-interleaved.test.mjs): the environment a launch script reads, a stub launcher (a
// torchrun function that prints its arguments) behind `sh -n` and `sh`, a flag's value, and the
// homogeneous H100 preset cluster.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

export const ENV = { NODE_RANK: '0', MASTER_ADDR: '10.0.0.1', DATA_PATH: '/data/corpus_text_document', TOKENIZER_MODEL: 'meta-llama/Meta-Llama-3-8B',
  VOCAB_FILE: '/data/vocab.json', MERGE_FILE: '/data/merges.txt', LR: '3e-4', TRAIN_ITERS: '1000', TP: '1', MICRO_BATCH: '1', NNODES: '1', NPROC_PER_NODE: '8' };

export function runStub(text, env = ENV) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'poseidon-megatron-'));
  const file = path.join(dir, 'launch.sh');
  fs.writeFileSync(file, `torchrun() { for a in "$@"; do printf '%s\\n' "$a"; done; }\n${text}`);
  const check = spawnSync('sh', ['-n', file], { encoding: 'utf8' });
  const run = spawnSync('sh', [file], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  fs.rmSync(dir, { recursive: true, force: true });
  return { check, run, args: run.stdout.split('\n').filter((l) => l !== '') };
}

export const argOf = (args, flag) => { const i = args.indexOf(flag); return i < 0 ? undefined : args[i + 1]; };

export const homog = (M) => JSON.parse(M.presets()).clusters.find((c) => c.id === 'dgx-h100-16');
