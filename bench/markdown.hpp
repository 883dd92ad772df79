// SPDX-License-Identifier: Apache-2.0
// The results section of docs/benchmarks.md, written from the figures a run collected
// (dblock-bench --markdown FILE), so that a benchmark run updates that page and no figure is
// edited into prose by hand. The page's method text stays as written; only the part between
// kResultsBegin and kResultsEnd is replaced.
//
//   std::string page = read("docs/benchmarks.md");
//   write("docs/benchmarks.md", replace_results(page, markdown_results(headlines, doc, cmd)));
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench.hpp"

namespace dblock::bench {

// The markers around the generated part of docs/benchmarks.md.
inline constexpr const char* kResultsBegin = "<!-- bench:results:begin -->";
inline constexpr const char* kResultsEnd = "<!-- bench:results:end -->";

// The results as Markdown: when, where and how the run was made (`command` is how it was
// started), the headlines, acquire + release per second by strategy, and the hot-key points.
// Tables of scenarios that did not run are left out.
std::string markdown_results(const std::vector<Headline>& headlines, const nlohmann::json& document,
                             const std::string& command);

// `page` with the text between kResultsBegin and kResultsEnd replaced by `results`. Throws
// std::runtime_error, naming the markers, when `page` lacks either of them.
std::string replace_results(const std::string& page, const std::string& results);

}  // namespace dblock::bench
