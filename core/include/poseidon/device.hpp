// A GPU type's rates, memory and links, and the provenance of calibrated values (docs/formats.md,
// "device"; docs/presets.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace poseidon {

// Provenance of device (or stack) values fitted to measured runs by `poseidon calibrate`
// (docs/calibration.md). Informational: the fitted values themselves are the device's (stack's) keys.
struct CalibratedValue {
    std::string parameter;  // a device key, e.g. "matmul_efficiency"
    double from = 0;
    double to = 0;
};

struct DeviceCalibration {
    std::vector<CalibratedValue> fitted;
    std::int64_t runs = 0;  // measured runs that used the device
    std::string source;
    std::optional<double> rms_log_error_before, rms_log_error_after;  // over those runs
    std::string notes;
};

struct Device {
    std::string id;    // preset id, or "" for an inline device
    // {"base": id, ...}: the preset this device was derived from (the same GPU with other values, e.g.
    // calibrated ones), so that a measured profile of that GPU still applies to it
    std::string base_id;
    std::string name;
    std::string vendor;
    double peak_tflops = 0;           // dense bf16/fp16 tensor peak
    // Dense low-precision tensor peaks (docs/model.md, "Low precision"); 0 = the device has no such
    // GEMM ("none" in JSON). fp8 serves the per-tensor and blockwise FP8 recipes, mxfp8 the
    // MX-scaled FP8 GEMMs (Blackwell, MI355X), nvfp4 NVIDIA's FP4 with 16-element scales (Blackwell).
    double fp8_tflops = 0;
    double mxfp8_tflops = 0;
    double nvfp4_tflops = 0;
    double fp32_tflops = 0;           // fp32 matrix rate without TF32 (0 = peak_tflops / 8)
    double tf32_tflops = 0;           // dense TF32 tensor rate (0 = the device has no TF32)
    double sustained_clock_ratio = 1; // sustained / boost clock under training load (power cap)
    // low-precision GEMMs' efficiency over matmul_efficiency on the same shapes (FP8 tensor cores
    // meet the power cap at a lower clock; docs/measured-rates.md)
    double low_precision_efficiency_ratio = 1;
    double comm_compute_slowdown = 0.1;  // compute slowdown while NCCL kernels run beside it (shared SMs, memory)
    double attention_efficiency = 0;     // fraction of the matrix peak fused (flash) attention reaches; 0 = matmul_efficiency
    // bf16 matrix FLOPs an SM does per exponential it takes (FLOP/clock/SM over exp/clock/SM): what
    // makes flash attention slower per FLOP with narrower heads; 0 = not known, no head-width effect
    double attention_flops_per_exp = 0;
    // Whether fused (flash) attention runs here, so that training.flash_attention applies:
    // Transformer Engine's FlashAttention 2 and cuDNN backends need compute capability 8.0, so
    // Megatron-Core on Volta and Turing runs UnfusedDotProductAttention (false in those presets).
    bool flash_attention = true;
    double memory_GiB = 0;
    double memory_bw_GBps = 0;
    double intra_node_bw_GBps = 0;    // per GPU, one direction
    std::string intra_node_link = "nvlink";  // "nvlink", "pcie" (peer-to-peer), "pcie_host" (staged through host memory), "infinity_fabric"
    double matmul_efficiency = 0.8;
    double memory_bw_efficiency = 0.8;
    double kernel_overhead_us = 5;
    double intra_node_link_efficiency = 0.8;
    double nvls_bw_GBps = 0;          // NVLink SHARP all-reduce algorithm bandwidth in an NVSwitch node (0 = none)
    double inter_node_link_efficiency = 0.85;
    double collective_latency_us = 10;
    double framework_overhead_GiB = 2.5;
    std::optional<DeviceCalibration> calibration;  // when values were fitted to measured runs
    std::string source;
    std::string notes;
    // The page's time-to-train cost (docs/presets.md): not used by the model, kept so that a device
    // written back (calibrate --out) keeps its price.
    std::optional<double> price_usd_per_gpu_hour;
    std::string price_source, price_as_of;
};

// How the notes, messages and outputs name a device: its preset id, else (inline) its name.
inline std::string device_key(const Device& d) { return d.id.empty() ? d.name : d.id; }

// An NVIDIA GPU before Ampere (Volta, Turing: V100, T4, RTX 2080, TITAN RTX). The device has no
// architecture key, but TF32 exists on exactly the NVIDIA generations with BF16 (Ampere and newer),
// so an NVIDIA device (or one without a vendor) without tf32_tflops is taken as older; AMD devices
// are not (web/megatron.js deviceCaps says the same).
inline bool pre_ampere_nvidia(const Device& d) {
    const bool nvidia = (d.vendor.empty() || d.vendor == "NVIDIA") && d.intra_node_link != "infinity_fabric";
    return nvidia && d.tf32_tflops <= 0;
}

}  // namespace poseidon
