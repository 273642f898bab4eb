// Plans (docs/formats.md, "Plan"): parsing, the consistency checks against a scenario (also run
// on plans the search builds), Megatron's constraints on the interleaved schedule, and JSON out.
#include <cmath>

#include "poseidon/combined_1f1b.hpp"
#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"
#include "grid_rules.hpp"

namespace poseidon {

namespace {

// Structural sanity of a plan built in code (the search, the fuzzer, an API caller) as much as of a
// parsed one, whose reader already enforces the same ranges: the cost model divides by these.
bool plan_is_well_formed(const Plan& plan, Problems& problems, const std::string& path) {
    const std::size_t before = problems.size();
    auto range = [&](const std::string& p, std::int64_t v, std::int64_t lo, std::int64_t hi) {
        if (v < lo || v > hi)
            problems.add(p, std::to_string(v) + " is out of range; expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    };
    range(path + ".micro_batch_size", plan.micro_batch_size, 1, max_global_batch_size);
    range(path + ".num_micro_batches", plan.num_micro_batches, 1, max_num_micro_batches);
    if (plan.schedule != "1f1b" && plan.schedule != "interleaved-1f1b")
        problems.add(path + ".schedule", show(Json(plan.schedule)) + " is not allowed; expected one of \"1f1b\", \"interleaved-1f1b\"");
    range(path + ".virtual_stages", plan.virtual_stages, 1, max_virtual_stages);
    range(path + ".microbatch_group_size", plan.microbatch_group_size, 0, max_num_micro_batches);
    if (plan.stages.empty() || plan.stages.size() > static_cast<std::size_t>(max_stages)) {
        problems.add(path + ".stages", std::to_string(plan.stages.size()) + " stages; expected 1 to " + std::to_string(max_stages) + " stages");
        return false;
    }
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        const auto& st = plan.stages[s];
        std::string sp = path + ".stages[" + std::to_string(s) + "]";
        // A stage may hold no block: only the embedding or only the head, as DeepSpeed partitions do.
        range(sp + ".num_layers", st.num_layers, 0, max_num_layers);
        if (st.chunk_layers.size() > static_cast<std::size_t>(max_virtual_stages))
            problems.add(sp + ".chunk_layers", std::to_string(st.chunk_layers.size()) + " entries; expected at most " + std::to_string(max_virtual_stages));
        for (std::size_t c = 0; c < st.chunk_layers.size(); ++c) range(sp + ".chunk_layers[" + std::to_string(c) + "]", st.chunk_layers[c], 0, max_num_layers);
        if (st.replicas.empty() || st.replicas.size() > static_cast<std::size_t>(max_replicas)) {
            problems.add(sp + ".replicas", std::to_string(st.replicas.size()) + " replicas; expected 1 to " + std::to_string(max_replicas));
            continue;
        }
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const auto& rs = st.replicas[k];
            std::string rp = st.homogeneous_form ? sp : sp + ".replicas[" + std::to_string(k) + "]";
            range(rp + ".tp", rs.tp, 1, max_tp);
            range(rp + (st.homogeneous_form ? ".dp" : ".count"), rs.count, 1, max_total_gpus);
            // A homogeneous stage's share is micro_batch_size / dp; validate_plan reports a dp that
            // does not divide it, so only a share that should exist is checked here.
            if (!st.homogeneous_form || (rs.count >= 1 && plan.micro_batch_size % rs.count == 0))
                range(rp + ".samples", rs.samples, 1, max_global_batch_size);
        }
    }
    return problems.size() == before;
}

// Megatron's constraints on the interleaved schedule (megatron/training/arguments.py and
// schedules.py): at least 2 stages, every stage's blocks split into V chunks (evenly, at least one
// block each, or as its chunk_layers say: Megatron-Core's --pipeline-model-parallel-layout, where a
// chunk may hold no block), the micro-batch count a multiple of the stage count, and the order's
// micro-batch group in [p, m] (forward_backward_pipelining_with_interleaving).
void validate_schedule(const Plan& plan, Problems& problems, const std::string& path) {
    const int V = plan.virtual_stages;
    const std::int64_t p = static_cast<std::int64_t>(plan.stages.size()), m = plan.num_micro_batches;
    if (plan.schedule == "1f1b") {
        if (V != 1)
            problems.add(path + ".virtual_stages", std::to_string(V) + " is not allowed with schedule \"1f1b\"; expected 1 (or schedule \"interleaved-1f1b\")");
        if (plan.microbatch_group_size != 0)
            problems.add(path + ".microbatch_group_size", std::to_string(plan.microbatch_group_size) +
                                                              " is not allowed with schedule \"1f1b\"; the micro-batch group is the interleaved order's (schedule \"interleaved-1f1b\")");
        for (std::size_t s = 0; s < plan.stages.size(); ++s)
            if (!plan.stages[s].chunk_layers.empty())
                problems.add(path + ".stages[" + std::to_string(s) + "].chunk_layers",
                             show(Json(plan.stages[s].chunk_layers)) + " is not allowed with schedule \"1f1b\"; blocks per model chunk need schedule \"interleaved-1f1b\"");
        return;
    }
    if (V < 2) problems.add(path + ".virtual_stages", std::to_string(V) + " is not allowed with schedule \"interleaved-1f1b\"; expected 2 or more (1 is \"1f1b\")");
    if (p < 2) problems.add(path + ".schedule", "\"interleaved-1f1b\" needs at least 2 stages; the plan has 1");
    if (V >= 2 && p >= 2 && m % p != 0)
        problems.add(path + ".num_micro_batches", std::to_string(m) + " is not a multiple of the " + std::to_string(p) +
                                                      " stages; the interleaved schedule runs micro-batches in groups of one per stage");
    const int G = plan.microbatch_group_size;
    if (G != 0 && (G < p || G > m))
        problems.add(path + ".microbatch_group_size", std::to_string(G) + " is out of range; expected " + std::to_string(p) + " (the stage count) to " + std::to_string(m) +
                                                          " (num_micro_batches): the interleaved order runs that many micro-batches through a chunk in a row");
    if (V < 2) return;
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        const StagePlan& st = plan.stages[s];
        const std::string sp = path + ".stages[" + std::to_string(s) + "]";
        const int l = st.num_layers;
        if (!st.chunk_layers.empty()) {
            std::int64_t sum = 0;
            for (int b : st.chunk_layers) sum += b;
            if (st.chunk_layers.size() != static_cast<std::size_t>(V))
                problems.add(sp + ".chunk_layers", std::to_string(st.chunk_layers.size()) + " entries; expected virtual_stages " + std::to_string(V) +
                                                      " entries, the blocks of each model chunk");
            else if (sum != l)
                problems.add(sp + ".chunk_layers", "sum to " + std::to_string(sum) + " blocks, not the stage's num_layers " + std::to_string(l) +
                                                      "; every block of the stage goes to exactly one chunk");
        } else if (l < V || l % V != 0) {
            problems.add(sp + ".num_layers", std::to_string(l) + " blocks do not split into " + std::to_string(V) +
                                                 " chunks of equal size (at least one block each); expected a multiple of virtual_stages, or the blocks of each chunk in chunk_layers");
        }
    }
}

// A stage's blocks per model chunk: one integer in [0, max_num_layers] per chunk.
void read_chunk_layers(const Json& j, const std::string& path, Problems& problems, std::vector<int>& out) {
    const std::string expected = "expected an array of 1 to " + std::to_string(max_virtual_stages) + " block counts, one per model chunk (integers in [0, " +
                                 std::to_string(max_num_layers) + "])";
    if (!j.is_array() || j.empty() || j.size() > static_cast<std::size_t>(max_virtual_stages)) {
        problems.add(path, show(j) + " is not allowed; " + expected);
        return;
    }
    for (std::size_t c = 0; c < j.size(); ++c) {
        const Json& e = j[c];
        const bool whole = e.is_number_integer() || (e.is_number_float() && std::isfinite(e.get<double>()) && std::floor(e.get<double>()) == e.get<double>());
        if (!whole || e.get<double>() < 0 || e.get<double>() > max_num_layers) {
            problems.add(path + "[" + std::to_string(c) + "]", show(e) + " is not allowed; expected an integer in [0, " + std::to_string(max_num_layers) + "]");
            continue;
        }
        out.push_back(static_cast<int>(e.get<double>()));
    }
}

// Megatron-Core's MoE parallel folding (parallel_state.py): the expert grid etp x ep x edp covers
// the stage's tp x cp x dp GPUs, experts split evenly over ep, each expert's FFN over etp.
void validate_expert_grid(const StagePlan& st, const ModelSpec& m, Problems& problems, const std::string& sp) {
    if (st.ep == 1 && st.etp == 1) return;
    if (!m.is_moe()) {
        const bool ep = st.ep > 1;
        problems.add(sp + (ep ? ".ep" : ".etp"), detail::expert_size_problem(m, ep ? st.ep : st.etp, ep));
        return;
    }
    if (const std::string e = detail::expert_size_problem(m, st.ep, true); !e.empty()) problems.add(sp + ".ep", e);
    if (const std::string e = detail::expert_size_problem(m, st.etp, false); !e.empty()) problems.add(sp + ".etp", e);
    if (!st.expert_grid_divides())
        problems.add(sp + ".ep", "ep x etp = " + std::to_string(st.ep) + " x " + std::to_string(st.etp) + " does not divide the stage's " + std::to_string(st.gpus()) +
                                     " GPUs (tp x cp x dp); the expert grid etp x ep x edp folds onto the same GPUs");
}

void write_expert_grid(const StagePlan& st, Json& out) {
    if (st.ep > 1) out["ep"] = st.ep;
    if (st.etp > 1) out["etp"] = st.etp;
}

}  // namespace

void validate_plan(const Plan& plan, const Scenario& sc, Problems& problems, const std::string& path, const std::string& batch_path) {
    const auto& m = sc.model;
    const auto& gb = sc.training.global_batch_size;
    if (!plan_is_well_formed(plan, problems, path)) return;
    const auto [gb_lo, gb_hi] = global_batch_range(sc.training);
    const std::int64_t trained = plan.micro_batch_size * plan.num_micro_batches;
    if (gb_lo == gb_hi && trained != gb)
        problems.add(path + ".num_micro_batches", std::to_string(plan.micro_batch_size) + " x " + std::to_string(plan.num_micro_batches) + " = " +
                                                      std::to_string(trained) + " samples does not equal " + batch_path + " " +
                                                      std::to_string(gb) + "; micro_batch_size x num_micro_batches must equal it");
    else if (trained < gb_lo || trained > gb_hi)
        problems.add(path + ".num_micro_batches", std::to_string(plan.micro_batch_size) + " x " + std::to_string(plan.num_micro_batches) + " = " +
                                                      std::to_string(trained) + " samples is outside " + batch_path + " " + std::to_string(gb) +
                                                      " within training.global_batch_tolerance; expected " + std::to_string(gb_lo) + " to " + std::to_string(gb_hi));
    // Megatron-Core runs the combined 1F1B of --overlap-moe-expert-parallel-comm with one stage or
    // in the interleaved schedule only (transformer_config.py: a pipeline needs virtual stages); on
    // a dense model the setting changes nothing (a note), as the search takes it (merges_passes)
    if (sc.training.overlap_moe_expert_parallel_comm && sc.model.is_moe() && plan.schedule == "1f1b" && plan.stages.size() > 1)
        problems.add(path + ".schedule", "\"1f1b\" with " + std::to_string(plan.stages.size()) +
                                             " stages is not allowed with training.overlap_moe_expert_parallel_comm true; expected \"interleaved-1f1b\" or a single stage (Megatron-Core merges forward and backward passes of a pipeline only in the interleaved schedule)");
    std::int64_t layer_sum = 0;
    std::vector<std::int64_t> used(sc.cluster.groups.size(), 0);
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        const auto& st = plan.stages[s];
        std::string sp = path + ".stages[" + std::to_string(s) + "]";
        layer_sum += st.num_layers;
        std::int64_t samples = 0;
        for (std::size_t k = 0; k < st.replicas.size(); ++k) {
            const auto& rs = st.replicas[k];
            std::string rp = st.homogeneous_form ? sp : sp + ".replicas[" + std::to_string(k) + "]";
            samples += static_cast<std::int64_t>(rs.samples) * rs.count;  // counted whatever the group: one mistake, one message
            if (rs.group < 0 || rs.group >= static_cast<int>(sc.cluster.groups.size())) {
                problems.add(rp + ".group", std::to_string(rs.group) + " is not a group of the cluster; expected 0.." + std::to_string(static_cast<int>(sc.cluster.groups.size()) - 1));
                continue;
            }
            const Group& g = sc.cluster.groups[rs.group];
            if (m.num_attention_heads % rs.tp != 0)
                problems.add(rp + ".tp", std::to_string(rs.tp) + " does not divide num_attention_heads " + std::to_string(m.num_attention_heads));
            else if (m.kv_heads() % rs.tp != 0)
                problems.add(rp + ".tp", std::to_string(rs.tp) + " does not divide num_kv_heads " + std::to_string(m.kv_heads()));
            else if (m.ffn_hidden_size % rs.tp != 0)
                problems.add(rp + ".tp", std::to_string(rs.tp) + " does not divide ffn_hidden_size " + std::to_string(m.ffn_hidden_size));
            if (rs.tp > g.gpus_per_node && rs.tp % g.gpus_per_node != 0)
                problems.add(rp + ".tp", std::to_string(rs.tp) + " exceeds gpus_per_node " + std::to_string(g.gpus_per_node) + " of group " + std::to_string(rs.group) +
                                             " and is not a multiple of it; a tensor-parallel group fits in one node or takes whole nodes");
            if (sc.training.sequence_parallel && m.seq_length % rs.tp != 0)
                problems.add(rp + ".tp", std::to_string(rs.tp) + " does not divide seq_length " + std::to_string(m.seq_length) + "; sequence parallelism splits the sequence over TP");
            used[rs.group] += static_cast<std::int64_t>(rs.tp) * rs.count * st.cp;
        }
        if (st.homogeneous_form && st.replicas.size() == 1) {
            int dp = st.replicas[0].count;
            if (plan.micro_batch_size % dp != 0)
                problems.add(sp + ".dp", std::to_string(dp) + " does not divide micro_batch_size " + std::to_string(plan.micro_batch_size) +
                                             "; each data-parallel replica takes an equal share of the micro-batch");
        } else if (samples != plan.micro_batch_size) {
            problems.add(sp + ".replicas", "samples sum to " + std::to_string(samples) + ", not micro_batch_size " + std::to_string(plan.micro_batch_size) + "; they must sum to it");
        }
    }
    if (layer_sum != m.num_layers)
        problems.add(path + ".stages", "num_layers sum to " + std::to_string(layer_sum) + ", not the model's num_layers " + std::to_string(m.num_layers) + "; every layer goes to exactly one stage");
    validate_schedule(plan, problems, path);
    for (std::size_t s = 0; s < plan.stages.size(); ++s) {
        const int cp = plan.stages[s].cp;
        if (cp <= 1) continue;
        const std::string cpp = path + ".stages[" + std::to_string(s) + "].cp";
        for (const std::string& e : detail::cp_size_problems(sc, cp)) problems.add(cpp, e);
        // Transformer Engine runs context parallelism on its flash / cuDNN attention only
        for (const auto& r : plan.stages[s].replicas)
            if (r.group >= 0 && r.group < static_cast<int>(sc.cluster.groups.size()) && !sc.cluster.groups[r.group].device.flash_attention) {
                const Device& d = sc.cluster.groups[r.group].device;
                problems.add(cpp, std::to_string(cp) + " on " + device_key(d) +
                                      ", which runs no fused attention (device flash_attention false): Transformer Engine's context parallelism needs its "
                                      "flash or cuDNN attention (Ampere or newer); expected cp 1 on that GPU");
                break;
            }
        // Ulysses (a2a) splits the heads over the cp ranks as well: the queries' and the keys' and
        // values' alike (Transformer Engine's all-to-all reshapes each into cp equal parts)
        if (sc.training.cp_comm_type == "a2a")
            for (const auto& r : plan.stages[s].replicas)
                if (const std::string e = detail::a2a_heads_problem(m, r.tp, cp); !e.empty()) {
                    problems.add(cpp, e);
                    break;
                }
    }
    for (std::size_t s = 0; s < plan.stages.size(); ++s) validate_expert_grid(plan.stages[s], m, problems, path + ".stages[" + std::to_string(s) + "]");
    if (plan.fsdp.value_or(sc.training.fsdp) && plan.virtual_stages > 1)
        problems.add(path + ".schedule", std::string("\"interleaved-1f1b\" with ") + (plan.fsdp ? path + ".fsdp" : "training.fsdp") +
                                             " is not modelled: Megatron-FSDP's per-block gathers are costed for 1F1B stages; use schedule \"1f1b\"");
    // (also where it is the scenario's: parse_scenario does not check that one beside a plan that names its own)
    if (plan.precision) check_precision_support(sc, *plan.precision, problems, path + ".precision");
    for (std::size_t g = 0; g < used.size(); ++g)
        if (used[g] > sc.cluster.groups[g].num_gpus())
            problems.add(path + ".stages", "use " + std::to_string(used[g]) + " GPUs of group " + std::to_string(g) + " (" + printable(sc.cluster.groups[g].device.name, 48) + ") but it has " +
                                               std::to_string(sc.cluster.groups[g].num_gpus()) + " (" + std::to_string(sc.cluster.groups[g].nodes) + " nodes x " +
                                               std::to_string(sc.cluster.groups[g].gpus_per_node) + ")");
}

Plan parse_plan(const Json& j, const Scenario& sc, const std::string& path, const std::string& batch_path) {
    Problems problems;
    Plan plan;
    // an entry of `plan --json` or an `estimate --json` output carries the plan under "plan", which
    // a plan never has: one line, not one per key
    if (j.is_object() && j.contains("plan") && j["plan"].is_object())
        throw InputError(path, "is an estimate or an entry of a search result (it has a \"plan\" object); expected the plan itself: the value of its \"plan\" key");
    if (j.is_object() && j.contains("plans") && j["plans"].is_array() && !j.contains("stages"))
        throw InputError(path, "is a whole search result (it has a \"plans\" array); expected one plan: the value of plans[k].plan, e.g. plans[0].plan for the best");
    // a scenario given where the plan goes (the two files swapped, or the scenario twice)
    if (j.is_object() && !j.contains("stages") && (j.contains("model") || j.contains("cluster")) && j.contains("training"))
        throw InputError(path, "is a scenario (it has \"model\", \"cluster\" and \"training\"); expected a plan: micro_batch_size, num_micro_batches and stages (estimate SCENARIO.json --plan PLAN.json)");
    ObjectReader r(j, path, problems);
    if (!r.ok()) problems.throw_if_any();
    r.reject_unknown({"micro_batch_size", "num_micro_batches", "schedule", "virtual_stages", "microbatch_group_size", "stages", "notes", "precision", "fsdp", "recompute", "recompute_num_layers"});
    r.string("notes", false);
    auto mbs = r.integer("micro_batch_size", true, 1, max_global_batch_size);
    auto nmb = r.integer("num_micro_batches", true, 1, max_num_micro_batches);
    if (mbs) plan.micro_batch_size = *mbs;
    if (nmb) plan.num_micro_batches = *nmb;
    if (auto v = r.choice("schedule", false, {"1f1b", "interleaved-1f1b"})) plan.schedule = *v;
    if (auto v = r.integer("virtual_stages", false, 1, max_virtual_stages)) plan.virtual_stages = static_cast<int>(*v);
    else if (plan.schedule == "interleaved-1f1b" && !r.has("virtual_stages"))
        problems.add(path + ".virtual_stages", "is missing; schedule \"interleaved-1f1b\" needs virtual_stages, the model chunks per stage (2 or more)");
    if (auto v = r.integer("microbatch_group_size", false, 1, max_num_micro_batches)) plan.microbatch_group_size = static_cast<int>(*v);
    // a searched choice (docs/formats.md, "Plan"): in place of training.precision / training.fsdp
    if (auto v = r.choice("precision", false, {"bf16", "fp16", "fp32", "fp8", "fp8-delayed", "fp8-blockwise", "mxfp8", "nvfp4"})) plan.precision = precision_from_string(*v);
    if (auto v = r.boolean("fsdp", false)) plan.fsdp = *v;
    if (auto v = r.choice("recompute", false, {"none", "selective", "full"})) {
        plan.recompute = *v == "none" ? Recompute::none : *v == "selective" ? Recompute::selective : Recompute::full;
        // (training.recompute is held to the same rule: check_combined_1f1b)
        if (plan.recompute == Recompute::full && sc.training.overlap_moe_expert_parallel_comm)
            problems.add(r.path_of("recompute"), std::string("\"full\" is not allowed with training.overlap_moe_expert_parallel_comm true (") + kCombinedRefusesFullWhy +
                                                     "); use \"selective\" or \"none\"");
    }
    if (auto v = r.integer("recompute_num_layers", false, 1, sc.model.num_layers > 0 ? sc.model.num_layers : max_num_layers)) {
        if (plan.recompute == Recompute::full)
            plan.recompute_num_layers = static_cast<int>(*v);
        else
            problems.add(r.path_of("recompute_num_layers"), std::to_string(*v) + " needs \"recompute\": \"full\" in the plan (Megatron-Core's --recompute-method block recomputes the first N blocks of each stage); the plan's recompute is " +
                                                                std::string(plan.recompute ? "\"" + to_string(*plan.recompute) + "\"" : "not given"));
    }
    const Json* stages = r.get("stages");
    if (!stages) {
        problems.add(path + ".stages", "is missing; expected an array of 1 to " + std::to_string(max_stages) + " stages");
    } else if (!stages->is_array() || stages->empty() || stages->size() > static_cast<std::size_t>(max_stages)) {
        problems.add(path + ".stages", show(*stages) + " is not allowed; expected an array of 1 to " + std::to_string(max_stages) + " stages");
    } else {
        for (std::size_t s = 0; s < stages->size(); ++s) {
            std::string sp = path + ".stages[" + std::to_string(s) + "]";
            ObjectReader st(( *stages)[s], sp, problems);
            StagePlan stage;
            if (!st.ok()) continue;
            if (auto v = st.integer("num_layers", true, 0, max_num_layers)) stage.num_layers = static_cast<int>(*v);
            if (auto v = st.integer("cp", false, 1, max_tp)) stage.cp = static_cast<int>(*v);
            if (auto v = st.integer("ep", false, 1, max_total_gpus)) stage.ep = static_cast<int>(*v);
            if (auto v = st.integer("etp", false, 1, max_tp)) stage.etp = static_cast<int>(*v);
            if (const Json* cl = st.get("chunk_layers")) read_chunk_layers(*cl, sp + ".chunk_layers", problems, stage.chunk_layers);
            if (st.has("replicas")) {
                std::string both;
                for (const char* k : {"group", "tp", "dp"})
                    if (st.has(k)) both += (both.empty() ? "" : ", ") + std::string(k);
                if (!both.empty())
                    problems.add(sp, "gives both replicas and " + both + "; expected one form: {num_layers, group, tp, dp} or {num_layers, replicas}");
                st.reject_unknown({"num_layers", "chunk_layers", "replicas", "group", "tp", "dp", "cp", "ep", "etp"});
                stage.homogeneous_form = false;
                const Json& reps = *st.get("replicas");
                if (!reps.is_array() || reps.empty() || reps.size() > static_cast<std::size_t>(max_replicas)) {
                    problems.add(sp + ".replicas", show(reps) + " is not allowed; expected an array of 1 to " + std::to_string(max_replicas) + " replicas");
                    continue;
                }
                for (std::size_t k = 0; k < reps.size(); ++k) {
                    std::string rp = sp + ".replicas[" + std::to_string(k) + "]";
                    ObjectReader rr(reps[k], rp, problems);
                    if (!rr.ok()) continue;
                    rr.reject_unknown({"group", "tp", "samples"});
                    ReplicaSet rs;
                    auto g = rr.integer("group", true, 0, max_groups - 1);
                    auto tp = rr.integer("tp", true, 1, max_tp);
                    auto smp = rr.integer("samples", true, 1, max_global_batch_size);
                    if (!g || !tp || !smp) continue;
                    rs.group = static_cast<int>(*g);
                    rs.tp = static_cast<int>(*tp);
                    rs.samples = static_cast<int>(*smp);
                    rs.count = 1;
                    stage.replicas.push_back(rs);
                }
            } else {
                st.reject_unknown({"num_layers", "chunk_layers", "group", "tp", "dp", "cp", "ep", "etp"});
                auto g = st.integer("group", true, 0, max_groups - 1);
                auto tp = st.integer("tp", true, 1, max_tp);
                auto dp = st.integer("dp", true, 1, max_total_gpus);
                if (!g || !tp || !dp) continue;
                ReplicaSet rs;
                rs.group = static_cast<int>(*g);
                rs.tp = static_cast<int>(*tp);
                rs.count = static_cast<int>(*dp);
                rs.samples = mbs && *dp > 0 ? static_cast<int>(*mbs / *dp) : 1;
                stage.replicas.push_back(rs);
            }
            plan.stages.push_back(stage);
        }
    }
    problems.throw_if_any();
    validate_plan(plan, sc, problems, path, batch_path);
    problems.throw_if_any();
    return plan;
}

Plan parse_plan_text(std::string_view text, const Scenario& sc) { return parse_plan(parse_json(text, "plan"), sc); }

bool plan_names_precision(std::string_view plan_text) {
    const Json j = Json::parse(plan_text.begin(), plan_text.end(), nullptr, false);
    return j.is_object() && j.contains("precision");
}

Json to_json(const Plan& plan) {
    Json stages = Json::array();
    for (const auto& st : plan.stages) {
        if (st.homogeneous_form && st.replicas.size() == 1) {
            const auto& r = st.replicas[0];
            stages.push_back({{"group", r.group}, {"num_layers", st.num_layers}, {"tp", r.tp}, {"dp", r.count}});
            if (st.cp > 1) stages.back()["cp"] = st.cp;
            write_expert_grid(st, stages.back());
        } else {
            Json reps = Json::array();
            for (const auto& r : st.replicas)
                for (int k = 0; k < r.count; ++k) reps.push_back({{"group", r.group}, {"tp", r.tp}, {"samples", r.samples}});
            stages.push_back({{"num_layers", st.num_layers}, {"replicas", reps}});
            if (st.cp > 1) stages.back()["cp"] = st.cp;
            write_expert_grid(st, stages.back());
        }
        if (!st.chunk_layers.empty()) stages.back()["chunk_layers"] = st.chunk_layers;
    }
    Json j = {{"micro_batch_size", plan.micro_batch_size}, {"num_micro_batches", plan.num_micro_batches}, {"schedule", plan.schedule}, {"stages", stages}};
    if (plan.schedule != "1f1b" || plan.virtual_stages != 1) j["virtual_stages"] = plan.virtual_stages;
    if (plan.microbatch_group_size != 0) j["microbatch_group_size"] = plan.microbatch_group_size;
    if (plan.precision) j["precision"] = to_string(*plan.precision);
    if (plan.fsdp) j["fsdp"] = *plan.fsdp;
    if (plan.recompute) j["recompute"] = to_string(*plan.recompute);
    if (plan.recompute_num_layers) j["recompute_num_layers"] = *plan.recompute_num_layers;
    return j;
}

}  // namespace poseidon
