// A GPU's data-parallel communication stream beside its compute stream, for the interleaved walk
// (docs/model.md, "Overlap under interleaving"): buckets run first in, first out, each from the
// later of its dispatch and the end of the one before; compute progresses at rate 1 - kappa while
// a bucket runs (the contention of comm_compute_slowdown) and at rate 1 otherwise.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace poseidon::detail {

class DpStream {
public:
    // Queues a bucket of `duration_s` dispatched at `dispatch_s` (dispatches come in time order,
    // as one stage's walk makes them); returns its {start, end}.
    std::pair<double, double> enqueue(double dispatch_s, double duration_s) {
        const double start = std::max(dispatch_s, tail_);
        const double end = start + duration_s;
        if (!busy_.empty() && busy_.back().second == start)
            busy_.back().second = end;  // back to back: one busy interval
        else
            busy_.push_back({start, end});
        tail_ = end;
        return {start, end};
    }

    // When `work_s` of compute that starts at `start_s` ends, at rate 1 - kappa beside buckets.
    // Without a bucket after start_s this is start_s + work_s exactly (the walk without overlap).
    double advance(double start_s, double work_s, double kappa) {
        while (first_ < busy_.size() && busy_[first_].second <= start_s) ++first_;  // the walk's clock only grows
        double t = start_s, w = work_s;
        for (std::size_t i = first_; i < busy_.size(); ++i) {
            const auto [a, b] = busy_[i];
            if (a > t) {
                if (w <= a - t) return t + w;
                w -= a - t;
                t = a;
            }
            const double cap = (b - t) * (1 - kappa);
            if (kappa < 1 && w <= cap) return t + w / (1 - kappa);
            w -= cap;
            t = b;
        }
        return t + w;
    }

    double tail_s() const { return tail_; }

private:
    std::vector<std::pair<double, double>> busy_;  // disjoint, in time order
    std::size_t first_ = 0;                        // intervals before it ended before the clock
    double tail_ = 0;
};

}  // namespace poseidon::detail
