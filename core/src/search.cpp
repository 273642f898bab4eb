// Placeholder until the search lands (issue 3); replaced by the real implementation.
#include "poseidon/search.hpp"

namespace poseidon {

SearchOptions parse_search_options(const Json& j) {
    Problems problems;
    SearchOptions o;
    ObjectReader r(j, "options", problems);
    if (r.ok()) {
        r.reject_unknown({"top", "exhaustive", "time_limit_s"});
        if (auto v = r.integer("top", false, 1, 100)) o.top_k = static_cast<int>(*v);
        if (auto v = r.boolean("exhaustive", false)) o.exhaustive = *v;
        if (auto v = r.number("time_limit_s", false, 0, false, 86400)) o.time_limit_s = *v;
    }
    problems.throw_if_any();
    return o;
}

SearchResult search(const Scenario&, const SearchOptions&) { throw std::runtime_error("search is not implemented yet"); }

Json to_json(const Scenario&, const SearchResult&) { return Json::object(); }

}  // namespace poseidon
