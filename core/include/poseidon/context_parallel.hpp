// Context parallelism's links and exchanges (core/src/context_parallel.cpp).
#pragma once

#include "poseidon/types.hpp"

namespace poseidon {

// Context parallelism (core/src/context_parallel.cpp): the bandwidth per GPU and the step latency
// of the exchanges among the cp ranks of a replica of tp x cp GPUs of group g.
struct CpLink {
    double bw_GBps = 0, latency_s = 0;
};
CpLink cp_link(const Group& g, int tp, int cp);
// What the exchange of keys and values adds to one block's attention forward and backward (the
// attention of the cp ranks' own queries taking core_forward_s / core_backward_s), and its
// volume per GPU: kv_bytes = one rank's keys and values of one block.
struct CpExtra {
    double forward_s = 0, backward_s = 0;
};
CpExtra cp_extra(const std::string& comm_type, int cp, double core_forward_s, double core_backward_s, double kv_bytes, double qkv_bytes, double out_bytes,
                 const CpLink& link, double kappa);

}  // namespace poseidon
