// poseidon_bench sweep and shape (bench_sweep.cpp): issue 11's sweep of cluster shapes, and one
// shape with the progress of its best plan. scale_scenario, even_groups and llama70b_shape live in bench.cpp, two_types in
// bench_blocks.cpp.
#pragma once

#include <string>

#include "poseidon/json_util.hpp"
#include "poseidon/search.hpp"

struct SweepOptions {
    double limit_s = 2;
    int threads = 1;
    std::string schedule = "any", node_counts = "halving";
    bool moe = false;  // megatron-sweep --moe: Qwen3 235B-A22B's shape in place of the dense model
};

// A mixed cluster of `types` device types (H100, A100-80GB, L40S, V100-32GB) with `gpus` GPUs
// split evenly, and a Llama-2-70B-shaped model with `layers` layers.
poseidon::Json scale_scenario(int gpus, int types, int layers, int batch);
// `gpus` GPUs split evenly over the first `types` devices, 8 per node, each group's NICs nic_GBps[t] a node.
poseidon::Json even_groups(int gpus, int types, const char* const devices[], const double nic_GBps[]);
// The Llama-2-70B shape (hidden 8192, 64 heads, 8 KV heads, SwiGLU 28672) with `layers` blocks.
poseidon::Json llama70b_shape(int layers);
// The sweeps' search options: top 3, no baselines, the sweep's limit, threads and space.
poseidon::SearchOptions sweep_search_options(const SweepOptions& so);
void sweep_bench(const SweepOptions& so);
void shape_bench(int types, int gpus, int layers, const SweepOptions& so);

// Issue 37's sweep (bench_megatron_sweep.cpp): 64/1024/4096 GPUs x 1-4 types (H100, A100-80GB,
// A100-40GB, V100-32GB) x 24/80/128 blocks, batch 1024, sequence parallelism, distributed optimizer,
// one table per recompute setting (`only`: just that one).
poseidon::Json megatron_scenario(int gpus, int types, int layers, const std::string& recompute, bool moe = false);
void megatron_sweep_bench(const SweepOptions& so, const std::string& only);
// One shape searched twice: to its limit, then with the K-th key found given as prune_above_s.
void megatron_oracle_bench(int types, int gpus, int layers, const std::string& recompute, const SweepOptions& so);

// Two groups of one device each (`a_nodes` x `a_gpn` and `b_nodes` x `b_gpn` GPUs), `bw` GB/s between
// nodes, model `model` with global batch `batch`: issue 11's mixed clusters.
poseidon::Json two_types(const char* model, const char* a, int a_nodes, int a_gpn, const char* b, int b_nodes, int b_gpn, double bw, int batch);
