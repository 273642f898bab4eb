// The ridge walk's stepping, shared by the 1F1B and the interleaved layer splits. Internal to
// core/src.
#pragma once

#include <cstdint>

namespace poseidon::detail {

// docs/search.md, "The ridge walk": outward from `center`, up to `up_end` and down to `lo` in turn, each direction stopped
// for good when its bound, monotone in the layer count, is cut (one pruned branch each).
template <class Halted, class CutUp, class CutDown, class Visit>
void walk_outward(int center, int lo, int up_end, Halted&& halted, CutUp&& cut_up, CutDown&& cut_down, Visit&& visit, std::int64_t& pruned) {
    int up = center, down = center - 1;
    bool go_up = true, go_down = down >= lo;
    while ((go_up || go_down) && !halted()) {
        if (go_up) {
            if (up > up_end) {
                go_up = false;
            } else if (cut_up(up)) {
                ++pruned;
                go_up = false;
            } else {
                visit(up++);
            }
        }
        if (go_down && !halted()) {
            if (down < lo) {
                go_down = false;
            } else if (cut_down(down)) {
                ++pruned;
                go_down = false;
            } else {
                visit(down--);
            }
        }
    }
}

}  // namespace poseidon::detail
