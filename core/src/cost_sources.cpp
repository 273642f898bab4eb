// Where a stage's costs come from (analytic, interpolated or a measured profile): the summaries of
// CostSources and their JSON (docs/formats.md, "Estimate output", "source").
#include <algorithm>

#include "poseidon/cost_model.hpp"
#include "poseidon/json_util.hpp"

namespace poseidon {

CostSource CostSources::forward() const {
    CostSource s = layer_forward;
    if (embedding_forward) s = std::min(s, *embedding_forward);
    if (head_forward) s = std::min(s, *head_forward);
    return s;
}

CostSource CostSources::backward() const {
    CostSource s = layer_backward;
    if (embedding_backward) s = std::min(s, *embedding_backward);
    if (head_backward) s = std::min(s, *head_backward);
    return s;
}

Json to_json(const CostSources& s) {
    Json j = {{"forward", to_string(s.forward())},         {"backward", to_string(s.backward())},
              {"optimizer", to_string(s.optimizer)},       {"links", to_string(s.links)},
              {"layer_forward", to_string(s.layer_forward)}, {"layer_backward", to_string(s.layer_backward)}};
    if (s.embedding_forward) j["embedding_forward"] = to_string(*s.embedding_forward);
    if (s.embedding_backward) j["embedding_backward"] = to_string(*s.embedding_backward);
    if (s.head_forward) j["head_forward"] = to_string(*s.head_forward);
    if (s.head_backward) j["head_backward"] = to_string(*s.head_backward);
    return j;
}

}  // namespace poseidon
