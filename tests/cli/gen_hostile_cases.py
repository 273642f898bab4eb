#!/usr/bin/env python3
"""Writes tests/cli/hostile_cases.json, the table of hostile inputs shared by the CLI driver
(tests/cli/cli_driver.cpp), the Catch2 core test (tests/unit/robustness_hostile.tests.cpp) and the wasm/node
tests. The JSON fixture is committed; edit this script and re-run it to change the table:

    python3 tests/cli/gen_hostile_cases.py > tests/cli/hostile_cases.json

Each case: {"name", "scenario", "plan", "expect_path_substring", ["expect_message_substring"]}.
Cases whose input is not valid Unicode text carry "scenario_bytes"/"plan_bytes" instead (each
code point U+0000..U+00FF is one byte) and "bytes": true; JavaScript strings cannot carry such
input, so the wasm tests skip them. Every case must be refused: CLI exit 2, core InputError,
wasm {"error": ...}, with a problem whose path contains expect_path_substring.
"""
import json

S = {"model": "tiny-8l", "training": {"global_batch_size": 64}, "cluster": "demo-mixed-16"}
P = {"micro_batch_size": 8, "num_micro_batches": 8,
     "stages": [{"group": 0, "num_layers": 4, "tp": 2, "dp": 4}, {"group": 1, "num_layers": 4, "tp": 2, "dp": 4}]}
MODEL = {"name": "m", "num_layers": 8, "hidden_size": 512, "num_attention_heads": 8, "vocab_size": 32000, "seq_length": 512}
DEVICE = {"name": "d", "peak_tflops": 100, "memory_GiB": 40, "memory_bw_GBps": 1000, "intra_node_bw_GBps": 100}
GROUP = {"device": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8, "inter_node_bw_GBps": 25}

def d(x): return json.dumps(x)
def with_(base, **kw):
    b = json.loads(json.dumps(base)); b.update(kw); return b
def training(**kw): return with_(S, training=with_(S["training"], **kw))
def model(**kw): return with_(S, model=with_(MODEL, **kw))
def cluster(**kw):
    c = {"name": "c", "groups": [GROUP]}; c.update(kw); return with_(S, cluster=c)
def group(**kw): return cluster(groups=[with_(GROUP, **kw)])
def device(**kw): return group(device=with_(DEVICE, **kw))
def stage(i, **kw):
    p = json.loads(json.dumps(P)); p["stages"][i].update(kw); return p

cases = []
def case(name, scenario, plan, path, msg=None, raw=False):
    c = {"name": name}
    if raw:
        c["bytes"] = True
        if isinstance(scenario, bytes): c["scenario_bytes"] = scenario.decode("latin-1")
        else: c["scenario"] = scenario
        if isinstance(plan, bytes): c["plan_bytes"] = plan.decode("latin-1")
        else: c["plan"] = plan
    else:
        c["scenario"] = scenario if isinstance(scenario, str) else d(scenario)
        c["plan"] = plan if isinstance(plan, str) else d(plan)
    c["expect_path_substring"] = path
    if msg: c["expect_message_substring"] = msg
    cases.append(c)

SP = d(P)
# --- JSON syntax and encoding ---------------------------------------------------------------
case("empty scenario", "", SP, "scenario", "empty input")
case("whitespace-only scenario", " \n\t ", SP, "scenario", "empty input")
case("top-level array", "[]", SP, "scenario", "expected an object")
case("top-level string", '"tiny-8l"', SP, "scenario", "expected an object")
case("top-level number", "42", SP, "scenario", "expected an object")
case("top-level null", "null", SP, "scenario", "expected an object")
case("trailing garbage", d(S) + " x", SP, "scenario", "not valid JSON")
case("two documents", d(S) + d(S), SP, "scenario", "not valid JSON")
case("NaN literal", d(S).replace("64", "NaN"), SP, "scenario.training.global_batch_size", "not valid JSON")
case("Infinity literal", d(S).replace("64", "Infinity"), SP, "scenario.training.global_batch_size", "not valid JSON")
case("negative Infinity literal", d(S).replace("64", "-Infinity"), SP, "scenario.training.global_batch_size", "not valid JSON")
case("1e999 overflows a double", d(S).replace("64", "1e999"), SP, "scenario.training.global_batch_size", "overflows a double")
case("-1e999 bandwidth", d(group()).replace("25", "-1e999"), SP, "scenario.cluster.groups[0].inter_node_bw_GBps", "overflows")
case("integer beyond 2^53", d(S).replace("64", "9007199254740993"), SP, "scenario.training.global_batch_size", "beyond 2^53")
case("negative integer beyond -2^53", d(S).replace("64", "-9007199254740993"), SP, "scenario.training.global_batch_size", "beyond -2^53")
case("integer beyond 2^64", d(S).replace("64", "18446744073709551616"), SP, "scenario.training.global_batch_size", "beyond 2^53")
case("duplicated top-level key", d(S)[:-1] + ', "model": "tiny-8l"}', SP, "scenario.model", "duplicated key")
case("duplicated nested key", d(S).replace('"global_batch_size": 64', '"global_batch_size": 64, "global_batch_size": 32'), SP, "scenario.training.global_batch_size", "duplicated key")
case("UTF-8 byte-order mark", b"\xef\xbb\xbf" + d(S).encode(), SP, "scenario", "byte-order mark", raw=True)
case("UTF-16 byte-order mark", b"\xff\xfe" + d(S).encode("utf-16-le"), SP, "scenario", "UTF-16", raw=True)
case("invalid UTF-8 in a string", d(with_(S, name="x")).replace('"x"', '"\udcff"').encode("utf-8", "surrogateescape"), SP, "scenario.name", "UTF-8", raw=True)
case("overlong UTF-8 encoding", d(with_(S, name="x")).replace('"x"', '"\udcc0\udcaf"').encode("utf-8", "surrogateescape"), SP, "scenario.name", "UTF-8", raw=True)
case("lone surrogate escape", d(S)[:-1] + ', "name": "\\ud800"}', SP, "scenario.name", "not valid JSON")
case("line comment", "// a comment\n" + d(S), SP, "scenario", "not valid JSON")
case("block comment", d(S)[:-1] + " /* c */ }", SP, "scenario", "not valid JSON")
case("single-quoted strings", d(S).replace('"', "'"), SP, "scenario", "not valid JSON")
case("unquoted key", d(S).replace('"model"', "model"), SP, "scenario", "not valid JSON")
case("trailing comma in object", d(S)[:-1] + ",}", SP, "scenario", "not valid JSON")
case("trailing comma in array", d(cluster(groups=[GROUP]))[:-3] + ",]}}", SP, "scenario.cluster.groups", "not valid JSON")
case("truncated document", d(S)[:25], SP, "scenario", "the document ends early")
case("truncated inside an array", '{"model": ["a"', SP, "scenario.model", "the document ends early")
case("trailing value", d(S) + " 2", SP, "scenario", "nothing may follow it")
case("raw control character in a string", d(S)[:-1] + ', "name": "a\tb"}', SP, "scenario.name", "not valid JSON")
case("nesting 65 deep", d(S)[:-1] + ', "notes": ' + "[" * 65 + "]" * 65 + "}", SP, "scenario.notes", "nesting deeper than 64")
case("nesting 20000 deep", "[" * 20000, SP, "scenario", "nesting deeper than 64")
case("object nesting 10000 deep", '{"a":' * 10000, SP, "scenario.a", "nesting deeper than 64")
case("70000-byte string", d(with_(S, name="x" * 70000)), SP, "scenario.name", "too long")
case("300-byte key", d(with_(S, **{"k" * 300: 1})), SP, "scenario[", "too long")
case("5000-byte name", d(with_(S, name="x" * 5000)), SP, "scenario.name", "too long")
# --- scenario keys, types and ranges ------------------------------------------------------------
case("missing model", d({"training": S["training"], "cluster": S["cluster"]}), SP, "scenario.model", "is missing")
case("unknown model preset", d(with_(S, model="gpt3-175")), SP, "scenario.model", "did you mean")
case("model is a number", d(with_(S, model=7)), SP, "scenario.model", "neither a preset id nor an object")
case("misspelled top-level key", d({"modle": "tiny-8l", "training": S["training"], "cluster": S["cluster"]}), SP, "scenario.modle", 'did you mean "model"')
case("missing training", d({"model": "tiny-8l", "cluster": S["cluster"]}), SP, "scenario.training", "is missing")
case("missing global_batch_size", d(with_(S, training={})), SP, "scenario.training.global_batch_size", "is missing")
case("global_batch_size 0", d(training(global_batch_size=0)), SP, "scenario.training.global_batch_size", "out of range")
case("global_batch_size negative zero", d(S).replace("64", "-0"), SP, "scenario.training.global_batch_size", "out of range")
case("global_batch_size 1.5", d(training(global_batch_size=1.5)), SP, "scenario.training.global_batch_size", "not an integer")
case("global_batch_size as a string", d(training(global_batch_size="64")), SP, "scenario.training.global_batch_size", "is a string")
case("global_batch_size beyond the limit", d(training(global_batch_size=10**9)), SP, "scenario.training.global_batch_size", "out of range")
case("precision misspelled", d(training(precision="bf17")), SP, "scenario.training.precision", 'did you mean "bf16"')
case("recompute is a boolean", d(training(recompute=True)), SP, "scenario.training.recompute", "is a boolean")
case("sequence_parallel is a string", d(training(sequence_parallel="yes")), SP, "scenario.training.sequence_parallel", "expected true or false")
case("tp_comm_overlap without sequence parallelism", d(training(tp_comm_overlap=True)), SP, "scenario.training.tp_comm_overlap", "needs sequence_parallel true")
case("scenario name is a number", d(with_(S, name=5)), SP, "scenario.name", "expected a string")
case("scenario notes is an array", d(with_(S, notes=[{}] * 3)), SP, "scenario.notes", "expected a string")
case("profile is a number", d(with_(S, profile=3)), SP, "scenario.profile")
case("profile layer faster than the device's peak", d(with_(S, profile={"devices": [{"device": "a100-sxm4-80gb", "points": [
    {"tp": 1, "samples": 2, "layer_forward_s": 1e-9, "layer_backward_s": 1}]}]})), SP,
    "scenario.profile.devices[0].points[0].layer_forward_s", "faster than the device can compute")
case("profile with no points and nothing else", d(with_(S, profile={"devices": [{"device": "a100-sxm4-80gb", "points": []}]})), SP,
    "scenario.profile.devices[0].points", "is empty")
case("heads do not divide hidden_size", d(model(num_attention_heads=7)), SP, "scenario.model.num_attention_heads", "does not divide hidden_size")
case("kv heads do not divide heads", d(model(num_kv_heads=3)), SP, "scenario.model.num_kv_heads", "does not divide num_attention_heads")
case("10001 layers", d(model(num_layers=10001)), SP, "scenario.model.num_layers", "out of range")
case("0 layers", d(model(num_layers=0)), SP, "scenario.model.num_layers", "out of range")
case("negative hidden_size", d(model(hidden_size=-512)), SP, "scenario.model.hidden_size", "out of range")
case("inline model without name", d(with_(S, model={k: v for k, v in MODEL.items() if k != "name"})), SP, "scenario.model.name", "is missing")
case("misspelled model key", d(model(num_layer=8)), SP, "scenario.model.num_layer", 'did you mean "num_layers"')
case("negative hidden dropout", d(model(hidden_dropout=-0.1)), SP, "scenario.model.hidden_dropout", "out of range")
case("attention dropout above 1", d(model(attention_dropout=1.5)), SP, "scenario.model.attention_dropout", "out of range")
case("dropout as text", d(model(hidden_dropout="0.1")), SP, "scenario.model.hidden_dropout", "is a string")
case("dropout null", d(model(attention_dropout=None)), SP, "scenario.model.attention_dropout", "is null")
case("unknown cluster preset", d(with_(S, cluster="demo-mixed")), SP, "scenario.cluster", "not a cluster preset")
case("empty groups", d(cluster(groups=[])), SP, "scenario.cluster.groups", "expected an array of 1 to 64 groups")
case("65 groups", d(cluster(groups=[GROUP] * 65)), SP, "scenario.cluster.groups", "expected an array of 1 to 64 groups")
case("more than 1,000,000 GPUs", d(group(nodes=200000)), SP, "scenario.cluster.groups", "too many")
case("unknown device preset", d(group(device="a100")), SP, "scenario.cluster.groups[0].device", "not a device preset")
case("peak_tflops 0", d(device(peak_tflops=0)), SP, "scenario.cluster.groups[0].device.peak_tflops", "out of range")
case("memory_GiB negative zero", d(device(memory_GiB=0.0)).replace('"memory_GiB": 0.0', '"memory_GiB": -0.0'), SP, "scenario.cluster.groups[0].device.memory_GiB", "out of range")
case("matmul_efficiency 1.5", d(device(matmul_efficiency=1.5)), SP, "scenario.cluster.groups[0].device.matmul_efficiency", "out of range")
case("framework overhead above the memory", d(device(framework_overhead_GiB=1e5)), SP, "scenario.cluster.groups[0].device.framework_overhead_GiB", "is more than memory_GiB")
case("negative inter-node bandwidth", d(group(inter_node_bw_GBps=-25)), SP, "scenario.cluster.groups[0].inter_node_bw_GBps", "out of range")
case("inter_group_bw_GBps 0", d(cluster(inter_group_bw_GBps=0)), SP, "scenario.cluster.inter_group_bw_GBps", "out of range")
case("2000 GPUs per node", d(group(gpus_per_node=2000)), SP, "scenario.cluster.groups[0].gpus_per_node", "out of range")
case("nodes as a string", d(group(nodes="2")), SP, "scenario.cluster.groups[0].nodes", "is a string")
case("group without device", d(cluster(groups=[{k: v for k, v in GROUP.items() if k != "device"}])), SP, "scenario.cluster.groups[0].device", "is missing")
# --- plans ------------------------------------------------------------------------------------------
DS = d(S)
case("empty plan", DS, "", "plan", "empty input")
case("plan is an array", DS, "[]", "plan", "expected an object")
case("plan is null", DS, "null", "plan", "expected an object")
case("plan trailing garbage", DS, SP + "]", "plan", "not valid JSON")
case("plan duplicated key", DS, SP[:-1] + ', "micro_batch_size": 8}', "plan.micro_batch_size", "duplicated key")
case("plan missing stages", DS, d({"micro_batch_size": 8, "num_micro_batches": 8}), "plan.stages", "is missing")
case("plan empty stages", DS, d(with_(P, stages=[])), "plan.stages", "expected an array of 1 to 1000 stages")
case("plan with 1001 stages", DS, d(with_(P, stages=[{"group": 0, "num_layers": 1, "tp": 1, "dp": 1}] * 1001)), "plan.stages", "expected an array of 1 to 1000 stages")
case("tp does not divide heads", DS, d(stage(0, tp=3)), "plan.stages[0].tp", "does not divide num_attention_heads 8")
case("tp exceeds a node and is not whole nodes", DS, d(stage(0, tp=12, dp=1)), "plan.stages[0].tp", "exceeds gpus_per_node")
case("tp 0", DS, d(stage(0, tp=0)), "plan.stages[0].tp", "out of range")
case("dp 0", DS, d(stage(0, dp=0)), "plan.stages[0].dp", "out of range")
case("layers do not sum", DS, d(stage(0, num_layers=3)), "plan.stages", "sum to 7")
case("more GPUs than the group", DS, d(stage(0, dp=8)), "plan.stages", "GPUs of group 0")
case("micro-batches do not multiply to the batch", DS, d(with_(P, num_micro_batches=7)), "plan.num_micro_batches", "does not equal training.global_batch_size 64")
case("dp does not divide micro_batch_size", DS, d(stage(0, dp=3)), "plan.stages[0].dp", "does not divide micro_batch_size 8")
case("group that does not exist", DS, d(stage(0, group=5)), "plan.stages[0].group", "not a group of the cluster")
case("negative group", DS, d(stage(0, group=-1)), "plan.stages[0].group", "out of range")
case("100001 micro-batches", DS, d(with_(P, num_micro_batches=100001)), "plan.num_micro_batches", "out of range")
case("0 micro-batches", DS, d(with_(P, num_micro_batches=0)), "plan.num_micro_batches", "out of range")
case("unknown schedule", DS, d(with_(P, schedule="gpipe")), "plan.schedule", '"1f1b"')
case("misspelled stage key", DS, d(stage(0, tensor_parallel=2)), "plan.stages[0].tensor_parallel", "unknown key")
case("replicas samples do not sum", DS, d(with_(P, stages=[P["stages"][0], {"num_layers": 4, "replicas": [{"group": 1, "tp": 2, "samples": 4}, {"group": 1, "tp": 2, "samples": 3}]}])), "plan.stages[1].replicas", "samples sum to 7")
case("empty replicas", DS, d(with_(P, stages=[P["stages"][0], {"num_layers": 4, "replicas": []}])), "plan.stages[1].replicas", "expected an array of 1 to 4096 replicas")
case("replica without tp", DS, d(with_(P, stages=[P["stages"][0], {"num_layers": 4, "replicas": [{"group": 1, "samples": 8}]}])), "plan.stages[1].replicas[0].tp", "is missing")
case("stage with both group and replicas", DS, d(with_(P, stages=[P["stages"][0], {"num_layers": 4, "group": 1, "replicas": [{"group": 1, "tp": 2, "samples": 8}]}])), "plan.stages[1]", "gives both replicas and group")
case("a search result entry as the plan", DS, d({"iteration_time_s": 1.0, "plan": P, "stages": []}), "plan", "expected the plan itself")
case("interleaved without virtual_stages", DS, d(with_(P, schedule="interleaved-1f1b")), "plan.virtual_stages", "is missing")
case("micro_batch_size 1e999", DS, SP.replace('"micro_batch_size": 8', '"micro_batch_size": 1e999'), "plan.micro_batch_size", "overflows")
case("plan notes is a number", DS, d(with_(P, notes=1)), "plan.notes", "expected a string")
case("plan recompute misspelled", DS, d(with_(P, recompute="fulll")), "plan.recompute", "full")
case("plan recompute_num_layers without full", DS, d(with_(P, recompute="selective", recompute_num_layers=2)), "plan.recompute_num_layers", 'needs "recompute": "full"')
case("plan recompute_num_layers 0", DS, d(with_(P, recompute="full", recompute_num_layers=0)), "plan.recompute_num_layers")
case("sequence parallel tp does not divide seq_length", d(with_(model(seq_length=513), training={"global_batch_size": 64, "sequence_parallel": True})), SP, "plan.stages[0].tp", "does not divide seq_length 513")
M16 = with_(MODEL, num_layers=16)
case("stages x micro-batches beyond the DAG limit",
     d({"model": M16, "training": {"global_batch_size": 100000}, "cluster": "demo-mixed-16"}),
     d({"micro_batch_size": 1, "num_micro_batches": 100000, "stages": [{"group": i // 8, "num_layers": 1, "tp": 1, "dp": 1} for i in range(16)]}),
     "plan.num_micro_batches", "too large a DAG")

# --- software stack, links, schedule, overlap (issues 10 and 13) --------------------------------------
case("unknown stack id", d(training(stack="megatron-cor")), SP, "scenario.training.stack", "did you mean \"megatron-core\"")
case("stack is a number", d(training(stack=3)), SP, "scenario.training.stack", "neither a preset id nor an object")
case("inline stack without its keys", d(training(stack={"name": "s"})), SP, "scenario.training.stack.fused_elementwise", "is missing")
case("stack override out of range", d(training(stack={"base": "megatron-core", "allocator_reserve_fraction": 2})), SP, "scenario.training.stack.allocator_reserve_fraction", "out of range")
case("unknown stack key", d(training(stack={"base": "megatron-core", "fused": True})), SP, "scenario.training.stack.fused", "unknown key")
case("grad_reduce_dtype int8", d(training(grad_reduce_dtype="int8")), SP, "scenario.training.grad_reduce_dtype", "not allowed")
case("overlap_param_gather without the distributed optimizer", d(training(overlap_param_gather=True)), SP, "scenario.training.overlap_param_gather", "needs distributed_optimizer")
case("unknown group intra-node link", d(group(intra_node_link="nvswitch")), SP, "scenario.cluster.groups[0].intra_node_link", "not allowed")
case("unknown inter-node link", d(group(inter_node_link="omnipath")), SP, "scenario.cluster.groups[0].inter_node_link", "not allowed")
case("attention_efficiency above 1", d(device(attention_efficiency=1.5)), SP, "scenario.cluster.groups[0].device.attention_efficiency", "out of range")
case("schedule gpipe", DS, d(with_(P, schedule="gpipe")), "plan.schedule", "interleaved-1f1b")
case("virtual_stages with 1f1b", DS, d(with_(P, virtual_stages=2)), "plan.virtual_stages", "not allowed with schedule")
case("virtual_stages 0", DS, d(with_(P, schedule="interleaved-1f1b", virtual_stages=0)), "plan.virtual_stages", "out of range")
case("interleaved blocks not divisible", DS, d(with_(P, schedule="interleaved-1f1b", virtual_stages=3)), "plan.stages[0].num_layers", "do not split into 3 chunks")
case("interleaved micro-batches not a multiple of stages", DS, d(with_(P, schedule="interleaved-1f1b", virtual_stages=2, micro_batch_size=16, num_micro_batches=4, stages=[with_(P["stages"][0], num_layers=2), with_(P["stages"][0], num_layers=2), with_(P["stages"][1], num_layers=4, dp=2)])), "plan.num_micro_batches", "not a multiple")
# --- MoE keys, preset overrides, recomputation blocks (issues 34 and 35) -------------------------
case("shared expert size beside no shared expert", d(model(num_experts=8, moe_top_k=2, num_shared_experts=0, moe_shared_expert_ffn_hidden_size=512)), SP,
     "scenario.model.moe_shared_expert_ffn_hidden_size", "beside num_shared_experts 0")
case("no shared expert over a preset's size", d(with_(S, model={"preset": "deepseek-v3", "num_shared_experts": 0})), SP,
     "scenario.model.moe_shared_expert_ffn_hidden_size", "null removes the preset's")
case("moe_layer_freq array of the wrong length", d(model(num_experts=8, moe_top_k=2, moe_layer_freq=[1, 0, 1])), SP, "scenario.model.moe_layer_freq", "an array of 3 flags for 8 blocks")
case("recompute_num_layers over the model's blocks", d(training(recompute="full", recompute_num_layers=9)), SP, "scenario.training.recompute_num_layers", "[1, 8]")
case("plan recompute_num_layers over the model's blocks", DS, d(with_(P, recompute="full", recompute_num_layers=100)), "plan.recompute_num_layers", "[1, 8]")
case("a scenario as the plan", DS, DS, "plan", "is a scenario")
case("context parallelism on a V100", DS, d(stage(1, cp=2, dp=2)), "plan.stages[1].cp", "runs no fused attention")
case("full recomputation in a plan beside the combined 1F1B", d(with_(model(num_experts=8, moe_top_k=2), training=with_(S["training"], overlap_moe_expert_parallel_comm=True))),
     d(with_(P, recompute="full")), "plan.recompute", "not allowed with training.overlap_moe_expert_parallel_comm")
case("Ulysses over fewer KV heads than cp", d(with_(model(num_kv_heads=2), training=with_(S["training"], cp_comm_type="a2a"))), d(stage(0, cp=4, dp=1)),
     "plan.stages[0].cp", "does not divide the 1 key-value heads per TP rank")

names = [c["name"] for c in cases]
assert len(names) == len(set(names)), "case names must be unique"
print(json.dumps(cases, indent=1, ensure_ascii=True))
