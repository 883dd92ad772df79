// SPDX-License-Identifier: Apache-2.0
// The human table on stdout (headline ratios first, then the other headline figures, then the
// curves) and the SVG chart, both made from the figures a run collected.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "bench.hpp"

namespace dblock::bench {

void print_table(std::ostream& out, const std::vector<Headline>& headlines,
                 const nlohmann::json& document);

nlohmann::json headlines_json(const std::vector<Headline>& headlines);

// An SVG of throughput and latency against connection count (uncontended, and the row lock and
// optimistic comparisons) and client count (hot key), for every database measured.
std::string render_chart(const nlohmann::json& document);

}  // namespace dblock::bench
