// Numbers beyond a double wherever the page reads JSON or a typed number (web/json-text.js): JSON.parse
// reads 1e309 as Infinity, which JSON.stringify would send to the core, or into a share link, as null.
//   node --test tests/web/json-text.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, nonFinitePath, NonFiniteNumberError } from '../../web/json-text.js';
import { parseValue } from '../../web/fields.js';
import { inputsFromScenario, ScenarioFileError } from '../../web/scenario-file.js';
import { parseProfileText, ProfileInputError } from '../../web/profile.js';
import { modelFromHfConfig, HfConfigError } from '../../web/hf.js';

test('parseJson refuses a number beyond a double, naming its JSON path; everything else is JSON.parse', () => {
  assert.deepStrictEqual(parseJson('{"a": [1, {"b": 1e308}], "c": null}'), { a: [1, { b: 1e308 }], c: null });
  assert.equal(parseJson('1e-400'), 0, 'an underflow is a number (the core checks its range)');
  assert.throws(() => parseJson('{"a": [1, {"b": 1e309}]}'), (e) => e instanceof NonFiniteNumberError && e.path === 'a[1].b'
    && e.message === 'a[1].b: a number too large for a double (it reads as infinity); expected a finite number');
  assert.throws(() => parseJson('-1e999'), /^NonFiniteNumberError: \(top level\): a number too large/);
  assert.throws(() => parseJson('{"a": '), SyntaxError);
  // deep nesting is walked without recursion
  const deep = `${'['.repeat(5000)}1e309${']'.repeat(5000)}`;
  assert.equal(nonFinitePath(JSON.parse(deep)).length, 5000 * 3);
});

test('a typed 1e309 stays text, so the core names it; finite numbers are numbers', () => {
  assert.equal(parseValue('num', '1e309'), '1e309');
  assert.equal(parseValue('int', '-1e400'), '-1e400');
  assert.equal(parseValue('num', ' 2.5e3 '), 2500);
  assert.equal(parseValue('num', '1e-320'), 1e-320);
});

test('a list field (training.recompute_modules) reads names split by commas or spaces; empty leaves the key out', () => {
  assert.deepEqual(parseValue('list', 'mla_up_proj, mlp'), ['mla_up_proj', 'mlp']);
  assert.deepEqual(parseValue('list', ' layernorm moe_act '), ['layernorm', 'moe_act']);
  assert.equal(parseValue('list', '  '), undefined);
});

test('the MoE blocks field reads an int or the per-block flags it shows (model.moe_layer_freq)', () => {
  assert.equal(parseValue('int-list', ' 2 '), 2);
  assert.deepEqual(parseValue('int-list', '0, 1, 0, 1'), [0, 1, 0, 1]);
  assert.deepEqual(parseValue('int-list', '[1,0]'), [1, 0]);
  assert.deepEqual(parseValue('int-list', '[1]'), [1]);
  assert.deepEqual(parseValue('int-list', '1, x'), [1, 'x']);  // the core names the element
  assert.equal(parseValue('int-list', ''), undefined);
});

test('scenario files, profiles and Hugging Face configs with 1e309 are refused with the path', () => {
  const presets = { models: [{ id: 'tiny' }], clusters: [{ id: 'c', groups: [] }], devices: [] };
  assert.throws(() => inputsFromScenario('{"model": "tiny", "cluster": "c", "training": {"global_batch_size": 1e309}}', presets),
    (e) => e instanceof ScenarioFileError && /^training\.global_batch_size: a number too large for a double/.test(e.message));
  assert.throws(() => parseProfileText('{"devices": [{"device": "a100-sxm4-80gb", "points": [{"tp": 1, "samples": 1, "layer_forward_s": 1, "layer_backward_s": 1e309}]}]}'),
    (e) => e instanceof ProfileInputError && e.message.startsWith("The profile's devices[0].points[0].layer_backward_s: a number too large for a double"));
  assert.throws(() => modelFromHfConfig('{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100, "max_position_embeddings": 1e309}'),
    (e) => e instanceof HfConfigError && /^config\.json: max_position_embeddings: a number too large for a double .*the model is unchanged\.$/.test(e.message));
});
