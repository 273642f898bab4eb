#include "poseidon/estimate.hpp"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "poseidon/json_util.hpp"
#include "poseidon/scenario.hpp"

namespace poseidon {

namespace {

double r12(double x) { return round_output(x); }

// The old definition of round_output, kept for exponents outside the fast path: printf and strtod
// are exact (correctly rounded) in glibc and musl alike, but musl computes them in long double,
// which is software 128-bit floating point in wasm.
double round_output_printf(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", x);
    return std::strtod(buf, nullptr);
}

__extension__ using u128 = unsigned __int128;

// 10^k as doubles: exact for k <= 22 (5^22 < 2^53).
constexpr double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
constexpr std::uint64_t pow5(int k) {
    std::uint64_t p = 1;
    for (int i = 0; i < k; ++i) p *= 5;
    return p;
}
constexpr std::uint64_t pow5_table[23] = {pow5(0),  pow5(1),  pow5(2),  pow5(3),  pow5(4),  pow5(5),  pow5(6),  pow5(7),
                                          pow5(8),  pow5(9),  pow5(10), pow5(11), pow5(12), pow5(13), pow5(14), pow5(15),
                                          pow5(16), pow5(17), pow5(18), pow5(19), pow5(20), pow5(21), pow5(22)};

// floor(|x| / 10^q) and whether the exact remainder is below, at or above one half (-1, 0, 1),
// for |x| = m * 2^e; false when the exact arithmetic does not fit 128 bits.
bool scaled_floor(std::uint64_t m, int e, int q, u128& floor_out, int& half) {
    if (q <= 0) {
        // m * 5^k * 2^(e+k), k = -q: m * 5^k < 2^53 * 5^22 < 2^105
        const int k = -q;
        const u128 p = static_cast<u128>(m) * pow5_table[k];
        const int s = e + k;
        if (s >= 0) {
            if (s > 22) return false;  // cannot happen: x * 10^k < 10^13
            floor_out = p << s;
            half = -1;
            return true;
        }
        const int r = -s;
        if (r >= 127) return false;
        const u128 rem = p & ((static_cast<u128>(1) << r) - 1);
        const u128 h = static_cast<u128>(1) << (r - 1);
        floor_out = p >> r;
        half = rem < h ? -1 : rem == h ? 0 : 1;
        return true;
    }
    // m * 2^e / (5^q * 2^q)
    const std::uint64_t p5 = pow5_table[q];
    u128 num, den;
    if (e >= q) {
        if (e - q + 53 > 127) return false;
        num = static_cast<u128>(m) << (e - q);
        den = p5;
    } else {
        if (q - e + 52 > 127) return false;
        num = m;
        den = static_cast<u128>(p5) << (q - e);
    }
    const u128 quo = num / den, rem = num - quo * den;
    floor_out = quo;
    const u128 twice = rem << 1;  // rem < den < 2^127
    half = twice < den ? -1 : twice == den ? 0 : 1;
    return true;
}

// How a collective over `ranks` GPUs runs: "none" for one GPU, else NCCL's pick of the ring and
// NVLink SHARP (docs/model.md, "Links").
const char* collective_algorithm(int ranks, bool nvls) { return ranks <= 1 ? "none" : nvls ? "nvls" : "ring"; }

}  // namespace

// The double nearest to x rounded to 12 significant digits, i.e. strtod(printf("%.12g", x)) with
// exact decimal arithmetic: the 12-digit mantissa M (10^11 <= M <= 10^12) and exponent q from
// integer arithmetic on x's binary mantissa (ties to even, as printf does), then M * 10^q or
// M / 10^-q in one correctly rounded double operation (both operands exact, |q| <= 22: Clinger's
// fast path). Only double and integer arithmetic, so native and wasm agree bit for bit without
// musl's long double printf; other exponents (|x| below ~1e-11 or above ~1e33) take the printf path.
double round_output(double x) {
    if (x == 0 || !std::isfinite(x)) return x;
    std::uint64_t bits;
    std::memcpy(&bits, &x, sizeof bits);  // std::bit_cast: missing from the wasm toolchain's libc++
    const int biased = static_cast<int>((bits >> 52) & 0x7ff);
    if (biased == 0) return round_output_printf(x);  // subnormal
    const std::uint64_t m = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
    const int e = biased - 1075;  // |x| = m * 2^e, 2^52 <= m < 2^53
    // decimal exponent of |x| in [2^(e+52), 2^(e+53)): floor((e + 52) * log10(2)), corrected below
    const int b = e + 52;
    int dec = b >= 0 ? (b * 78913) >> 18 : -((-b * 78913 + (1 << 18) - 1) >> 18);
    constexpr std::uint64_t lo = 100000000000ULL, hi = 1000000000000ULL;  // 10^11, 10^12
    for (int tries = 0; tries < 4; ++tries) {
        const int q = dec - 11;
        if (q < -22 || q > 22) break;
        u128 f;
        int half;
        if (!scaled_floor(m, e, q, f, half)) break;
        if (f >= hi) {
            ++dec;
            continue;
        }
        if (f < lo) {
            --dec;
            continue;
        }
        const std::uint64_t mant = static_cast<std::uint64_t>(f) + (half > 0 || (half == 0 && (f & 1) != 0) ? 1 : 0);  // ties to even
        const double md = static_cast<double>(mant);  // exact: mant <= 10^12 < 2^53
        const double r = q >= 0 ? md * exact_pow10[q] : md / exact_pow10[-q];
        return std::signbit(x) ? -r : r;
    }
    return round_output_printf(x);
}

namespace {
Estimate estimate_in(const Scenario& sc, const Plan& plan, bool detailed);
}  // namespace

Estimate estimate(const Scenario& sc, const Plan& plan, bool detailed) {
    // a plan that carries its own precision or FSDP choice trains in that scenario
    if (plan.has_training_choice()) return estimate_in(scenario_for_plan(sc, plan), plan, detailed);
    return estimate_in(sc, plan, detailed);
}

namespace {
Estimate estimate_in(const Scenario& sc, const Plan& plan, bool detailed) {
    Problems problems;
    validate_plan(plan, sc, problems);
    if (static_cast<std::int64_t>(plan.stages.size()) * plan.num_micro_batches > max_dag_cells)
        problems.add("plan.num_micro_batches", std::to_string(plan.stages.size()) + " stages x " + std::to_string(plan.num_micro_batches) +
                                                   " micro-batches is too large a DAG; at most " + std::to_string(max_dag_cells) + " stage x micro-batch cells");
    problems.throw_if_any();
    Estimate e;
    e.plan = plan;
    e.placement = place_plan(sc, plan);
    e.stages = evaluate_stages(sc, plan, e.placement);
    std::vector<StageTimes> times;
    times.reserve(e.stages.size());
    for (const auto& s : e.stages) times.push_back(s.times);
    if (plan.virtual_stages > 1) {
        // Interleaved 1F1B: the DAG over the p V chunks in data order (chunk c of stage s at c p + s).
        const int p = static_cast<int>(times.size()), V = plan.virtual_stages;
        std::vector<StageTimes> chunks(static_cast<std::size_t>(p) * V);
        for (int s = 0; s < p; ++s)
            for (int c = 0; c < V; ++c) chunks[static_cast<std::size_t>(c) * p + s] = e.stages[s].chunk_times[c];
        fold_blocking_sends(sc.training.stack, chunks);
        e.dag = evaluate_interleaved_dag(chunks, times, V, plan.num_micro_batches, detailed, plan.microbatch_group_size);
    } else {
        fold_blocking_sends(sc.training.stack, times);
        DagWorkspace ws;
        e.dag = evaluate_dag(times, plan.num_micro_batches, detailed, ws);
    }
    e.iteration_time_s = e.dag.iteration_time_s;
    e.notes = scenario_notes(sc);
    if (std::string mix = block_mix_note(sc.model, plan); !mix.empty()) e.notes.push_back(std::move(mix));
    for (std::string& n : dense_stage_grid_notes(sc.model, plan)) e.notes.push_back(std::move(n));
    // A forward longer than its backward reads as a mistake: where the host's issue of the dropless
    // MoE layers makes a tenth of a stage's forward or more, say so (docs/model.md, "Host time of a
    // dropless MoE layer")
    {
        std::string list;
        int named = 0, more = 0;
        for (std::size_t s = 0; s < e.stages.size(); ++s) {
            const StageEval& ev = e.stages[s];
            const double wait = ev.replica_costs[ev.slowest_replica].forward_moe_host_wait_s;
            if (!(wait > 0.1 * ev.times.forward_s)) continue;
            if (named == 3) {
                ++more;
                continue;
            }
            list += (named++ ? ", " : "") + std::string("stage ") + std::to_string(s) + " " + fixed_text(1e3 * wait, 2) + " ms of its " + fixed_text(1e3 * ev.times.forward_s, 2) + " ms forward";
        }
        if (named > 0)
            e.notes.push_back("MoE host wait: per micro-batch " + list + (more ? ", and " + std::to_string(more) + " more stages" : "") +
                              " wait for the host to issue the dropless MoE layers' expert sections (the dispatcher waits on the host for the token counts; "
                              "training.cuda_graph_impl \"full_iteration\" removes it), so a forward may take longer than its backward");
    }
    // the plan's own settings that change nothing here (the scenario's are scenario_notes)
    if (sc.training.cp_comm_type != "p2p" && std::all_of(plan.stages.begin(), plan.stages.end(), [](const StagePlan& st) { return st.cp <= 1; }))
        e.notes.push_back("training.cp_comm_type \"" + sc.training.cp_comm_type + "\" changes nothing in this plan: no stage splits its sequence (cp 1)");
    e.closed_form_time_s = closed_form_time_s(times, plan.num_micro_batches, plan.virtual_stages);
    // the batch the plan trains (training.global_batch_tolerance lets it differ from the scenario's)
    const double gbs = static_cast<double>(plan.micro_batch_size * plan.num_micro_batches);
    e.samples_per_s = gbs / e.iteration_time_s;
    e.tokens_per_s = e.samples_per_s * sc.model.seq_length;
    double peak = 0;
    for (const auto& st : plan.stages)
        for (const auto& r : st.replicas) {
            e.num_gpus += r.tp * r.count * st.cp;
            peak += r.tp * r.count * st.cp * sc.cluster.groups[r.group].device.peak_tflops * 1e12;
        }
    const double flops = model_flops_per_iteration(sc.model, plan.micro_batch_size * plan.num_micro_batches);
    e.mfu = flops / (e.iteration_time_s * peak);
    e.model_tflops_per_gpu = flops / e.iteration_time_s / e.num_gpus / 1e12;
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        const auto& st = e.stages[s];
        if (!st.fits) {
            e.memory_fits = false;
            double need = st.memory.total_GiB();
            e.feasible = false;
            e.problems.push_back("stage " + std::to_string(s) + " needs " + fixed_text(need, 2) + " GiB per GPU but the device has " + fixed_text(st.memory_capacity_GiB, 2) +
                                 " GiB (over by " + fixed_text(need - st.memory_capacity_GiB, 2) + " GiB)");
        }
    }
    if (sc.training.stack.stage_needs_parameters)
        for (std::size_t s = 0; s < e.stages.size(); ++s)
            if (e.stages[s].replica_costs.front().params_per_gpu <= 0) {
                e.feasible = false;
                e.problems.push_back("stage " + std::to_string(s) + " holds no parameters (no block, embedding or head); the " + sc.training.stack.name +
                                     " stack builds an optimizer per stage and refuses an empty parameter list");
            }
    return e;
}
}  // namespace

Json to_json(const Scenario& sc, const Estimate& e, bool with_timeline) {
    Json stages = Json::array();
    for (std::size_t s = 0; s < e.stages.size(); ++s) {
        const auto& ev = e.stages[s];
        const auto& sp = e.plan.stages[s];
        const auto& slow = sp.replicas[ev.slowest_replica];
        Json replicas = Json::array();
        for (std::size_t k = 0; k < sp.replicas.size(); ++k) {
            const auto& r = sp.replicas[k];
            const auto& rc = ev.replica_costs[k];
            replicas.push_back({{"group", r.group},
                                {"device", device_key(sc.cluster.groups[r.group].device)},
                                {"tp", r.tp},
                                {"count", r.count},
                                {"samples", r.samples},
                                {"forward_s", r12(rc.forward_s)},
                                {"backward_s", r12(rc.backward_s)},
                                {"memory_GiB", r12(rc.memory.total_GiB())},
                                {"tp_algorithm", collective_algorithm(r.tp, rc.tp_nvls)},
                                {"tp_bus_bw_GBps", r12(rc.tp_bus_bw_GBps)},
                                {"source", to_json(rc.sources)}});
        }
        std::string device;
        for (const auto& r : sp.replicas) {
            const auto& d = sc.cluster.groups[r.group].device;
            std::string name = device_key(d);
            if (device.find(name) == std::string::npos) device += (device.empty() ? "" : "+") + name;
        }
        stages.push_back({{"index", s},
                          {"device", device},
                          {"group", slow.group},
                          {"gpus", sp.gpus()},
                          {"tp", slow.tp},
                          {"dp", sp.dp()},
                          {"num_layers", sp.num_layers},
                          {"samples_per_replica", slow.samples},
                          {"forward_s", r12(ev.times.forward_s)},
                          {"backward_s", r12(ev.times.backward_s)},
                          {"send_forward_s", r12(ev.times.send_forward_s)},
                          {"send_backward_s", r12(ev.times.send_backward_s)},
                          {"dp_sync_s", r12(ev.times.dp_sync_s)},
                          {"tp_algorithm", collective_algorithm(slow.tp, ev.replica_costs[ev.slowest_replica].tp_nvls)},
                          {"tp_bus_bw_GBps", r12(ev.replica_costs[ev.slowest_replica].tp_bus_bw_GBps)},
                          {"dp_algorithm", collective_algorithm(sp.dp(), ev.dp_nvls)},
                          {"dp_bus_bw_GBps", r12(ev.dp_bus_bw_GBps)},
                          {"optimizer_s", r12(ev.times.optimizer_s)},
                          {"memory_GiB", r12(ev.memory.total_GiB())},
                          {"memory_capacity_GiB", r12(ev.memory_capacity_GiB)},
                          {"memory_breakdown_GiB",
                           {{"weights", r12(ev.memory.weights_GiB)},
                            {"gradients", r12(ev.memory.gradients_GiB)},
                            {"optimizer", r12(ev.memory.optimizer_GiB)},
                            {"activations", r12(ev.memory.activations_GiB)},
                            {"temporary", r12(ev.memory.temporary_GiB)},
                            {"allocator", r12(ev.memory.allocator_GiB)},
                            {"overhead", r12(ev.memory.overhead_GiB)}}},
                          {"fits", ev.fits},
                          {"source", to_json(ev.sources)},
                          {"replicas", replicas}});
        if (sp.cp > 1) stages.back()["cp"] = sp.cp;  // context parallelism: replicas of tp x cp GPUs
        if (sc.model.is_moe()) {
            // the expert grid and what the routed experts hold and exchange (docs/formats.md, "estimate")
            const ReplicaCost& rc = ev.replica_costs[ev.slowest_replica];
            stages.back()["ep"] = sp.ep;
            stages.back()["etp"] = sp.etp;
            stages.back()["edp"] = sp.gpus() / (sp.ep * sp.etp);
            stages.back()["expert_params_per_gpu"] = r12(rc.expert_params_per_gpu);
            // the parts of memory_breakdown_GiB's weights and temporary that are the experts' and the dispatch's
            stages.back()["expert_weights_GiB"] = r12(rc.params_per_gpu > 0 ? rc.memory.weights_GiB * rc.expert_params_per_gpu / rc.params_per_gpu : 0.0);
            stages.back()["dispatch_buffers_GiB"] = r12(rc.dispatch_buffers_GiB);
            stages.back()["forward_ep_comm_s"] = r12(rc.forward_ep_comm_s);
            stages.back()["backward_ep_comm_s"] = r12(rc.backward_ep_comm_s);
            stages.back()["forward_moe_host_wait_s"] = r12(rc.forward_moe_host_wait_s);
        }
        // Tied embeddings over several stages: the part of dp_sync_s that is the embedding's.
        if (ev.times.embedding_sync_s > 0) stages.back()["embedding_sync_s"] = r12(ev.times.embedding_sync_s);
        // The overlap chains (docs/model.md, "Overlap"), only when their switch is on.
        const StageTimes& t = ev.times;
        if (!ev.chunk_times.empty()) {
            // interleaved: each chunk's buckets (docs/model.md, "Overlap under interleaving")
            Json grad = Json::array(), gather = Json::array();
            int nb = 0, ng = 0;
            for (const StageTimes& c : ev.chunk_times) {
                nb += c.grad_buckets;
                ng += c.param_gather_buckets;
                grad.push_back({{"buckets", c.grad_buckets}, {"bucket_s", r12(c.grad_bucket_s)}});
                gather.push_back({{"buckets", c.param_gather_buckets}, {"bucket_s", r12(c.param_gather_bucket_s)}});
            }
            if (nb > 0) stages.back()["grad_overlap"] = {{"buckets", nb}, {"chunks", grad}};
            if (ng > 0) stages.back()["param_gather_overlap"] = {{"buckets", ng}, {"chunks", gather}};
        }
        if (t.grad_buckets > 0)
            stages.back()["grad_overlap"] = {{"buckets", t.grad_buckets},
                                             {"bucket_s", r12(t.grad_bucket_s)},
                                             {"last_backward_slowdown_s", r12(t.last_backward_extra_s - t.deferred_wgrad_s)}};
        if (t.deferred_wgrad_s > 0) stages.back()["deferred_head_wgrad_s"] = r12(t.deferred_wgrad_s);
        if (t.param_gather_buckets > 0)
            stages.back()["param_gather_overlap"] = {{"buckets", t.param_gather_buckets},
                                                     {"bucket_s", r12(t.param_gather_bucket_s)},
                                                     {"first_forward_slowdown_s", r12(t.first_forward_extra_s)}};
    }
    Json j = {{"iteration_time_s", r12(e.iteration_time_s)},
              {"tokens_per_s", r12(e.tokens_per_s)},
              {"samples_per_s", r12(e.samples_per_s)},
              {"mfu", r12(e.mfu)},
              {"model_tflops_per_gpu", r12(e.model_tflops_per_gpu)},
              {"model_params", model_param_counts(sc.model).total},
              {"model_active_params", model_param_counts(sc.model).active},
              {"num_gpus", e.num_gpus},
              {"memory_fits", e.memory_fits},
              {"feasible", e.feasible},
              {"closed_form_time_s", r12(e.closed_form_time_s)},
              {"stages", stages},
              {"problems", e.problems},
              {"notes", e.notes},
              {"plan", to_json(e.plan)}};
    const auto& b = e.dag.breakdown;
    j["breakdown"] = {{"compute_s", r12(b.compute_s)},     {"bubble_s", r12(b.bubble_s)},   {"tp_comm_s", r12(b.tp_comm_s)},
                      {"pp_comm_s", r12(b.pp_comm_s)},     {"dp_comm_s", r12(b.dp_comm_s)}, {"optimizer_s", r12(b.optimizer_s)}, {"ep_comm_s", r12(b.ep_comm_s)},
                      {"bottleneck_stage", b.bottleneck_stage}};
    if (with_timeline) {
        Json tl = Json::array();
        for (const auto& ev : e.dag.timeline) {
            Json item = {{"stage", ev.stage}, {"kind", to_string(ev.kind)}, {"micro_batch", nullptr}, {"start_s", r12(ev.start_s)}, {"end_s", r12(ev.end_s)},
                         {"resource", resource_of(ev.kind)}};
            if (ev.micro_batch >= 0) item["micro_batch"] = ev.micro_batch;
            if (e.plan.virtual_stages > 1) item["chunk"] = ev.chunk;
            if (ev.bucket >= 0) item["bucket"] = ev.bucket;
            tl.push_back(std::move(item));
        }
        j["timeline"] = std::move(tl);
    }
    return j;
}

}  // namespace poseidon
