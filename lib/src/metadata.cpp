// SPDX-License-Identifier: Apache-2.0
// Lock metadata checks (see metadata.hpp).
#include "metadata.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "dblock/error.hpp"
#include "escaped_text.hpp"

namespace dblock::detail {

namespace {

constexpr std::string_view kExample =
    "pass JSON text such as {\"job\":\"nightly\"} (dblock/json.hpp turns a nlohmann::json into "
    "it), or leave metadata empty for none";

[[noreturn]] void refuse(std::string_view what) {
  throw Error(ErrorCode::kInvalidArgument,
              "the lock metadata " + std::string(what) + "; " + std::string(kExample));
}

// Walks the parsed value: counts the nesting and looks into every string and name. Stops at the
// first thing the servers would refuse, keeping why.
class Checker final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& s) override { return no_nul(s, "a string"); }
  bool binary(binary_t&) override { return true; }  // not produced by JSON text
  bool key(string_t& s) override { return no_nul(s, "a member name"); }
  bool start_object(std::size_t) override { return enter(); }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ...": the part after
    // the bracketed id.
    std::string_view what = e.what();
    if (const auto close = what.find("] "); close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
    problem_ = "is not JSON: " + escaped_text(what, Bytes::kAsciiOnly);
    return false;
  }

  const std::string& problem() const noexcept { return problem_; }

 private:
  bool no_nul(const string_t& s, std::string_view where) {
    if (s.find('\0') == string_t::npos) return true;
    problem_ = "holds \\u0000 in " + std::string(where) +
               ", which PostgreSQL's jsonb cannot store; leave the NUL character out";
    return false;
  }
  bool enter() {
    if (++depth_ <= kMaxMetadataDepth) return true;
    problem_ = "nests arrays and objects more than " + std::to_string(kMaxMetadataDepth) +
               " deep, which MariaDB refuses; flatten it";
    return false;
  }
  bool leave() {
    --depth_;
    return true;
  }

  int depth_ = 0;
  std::string problem_;
};

}  // namespace

void validate_metadata(std::string_view text) {
  if (text.empty()) return;
  if (text.starts_with("\xef\xbb\xbf")) {
    refuse("starts with a byte order mark, which the servers refuse; remove it");
  }
  Checker checker;
  if (!nlohmann::json::sax_parse(text, &checker)) refuse(checker.problem());
}

Value metadata_param(std::string_view text) { return text.empty() ? Value() : Value(text); }

}  // namespace dblock::detail
