// One exception type for bad input (fmt's format_error, Catch2's style): it carries every problem
// found, each naming the JSON path, the offending value and what is allowed.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace poseidon {

struct Problem {
    std::string path;     // JSON path, e.g. "plan.stages[2].tp"
    std::string message;  // "3 does not divide num_attention_heads 40"
    std::string line() const { return path.empty() ? message : path + ": " + message; }
};

class InputError : public std::runtime_error {
public:
    explicit InputError(std::vector<Problem> problems);
    InputError(std::string path, std::string message);
    const std::vector<Problem>& problems() const noexcept { return problems_; }

private:
    std::vector<Problem> problems_;
};

// Collects problems so that a validator can report all of them at once instead of the first.
class Problems {
public:
    void add(std::string path, std::string message) { items_.push_back({std::move(path), std::move(message)}); }
    bool empty() const noexcept { return items_.empty(); }
    std::size_t size() const noexcept { return items_.size(); }
    void throw_if_any() const {
        if (!items_.empty()) throw InputError(items_);
    }
    const std::vector<Problem>& items() const noexcept { return items_; }

private:
    std::vector<Problem> items_;
};

}  // namespace poseidon
