// SPDX-License-Identifier: Apache-2.0
// Fuzzes the validators that stand between user input and SQL text: validate_identifier,
// quote_identifier and TableNames (names that are quoted into SQL), and validate_lock_key (keys
// that are bound as parameters). Each answer is compared with an oracle written here from the
// documented rules, independently of the library's code:
//
// - an identifier is accepted exactly when it matches [A-Za-z_][A-Za-z0-9_]{0,62}, and then
//   quotes to "name" / `name`; a rejection is Error(kInvalidArgument) whose message is one line
//   of printable ASCII (the rejected bytes are escaped, never copied);
// - TableNames(prefix, schema) accepts exactly a valid-or-empty prefix and schema, and names a
//   table only when prefix + base is itself valid;
// - a lock key is accepted exactly when it is 1 to 255 code points of well-formed UTF-8
//   (Unicode table 3-7) without NUL.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "dblock/error.hpp"
#include "dblock/table_names.hpp"
#include "dblock/unique_key_lock.hpp"

namespace {

[[noreturn]] void fail(std::string_view property, std::string_view input, std::string_view got) {
  std::cerr << "property violated: " << property << "\ninput: " << input << "\ngot: " << got
            << "\n";
  std::abort();
}

bool oracle_identifier(std::string_view s) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.empty() || s.size() > 63 || !letter(s[0])) return false;
  for (char c : s) {
    if (!letter(c) && !digit(c)) return false;
  }
  return true;
}

// Well-formed UTF-8 per the Unicode Standard, table 3-7; returns the code points or -1.
long oracle_utf8_length(std::string_view s) {
  long n = 0;
  std::size_t i = 0;
  auto in = [&](std::size_t k, unsigned lo, unsigned hi) {
    if (i + k >= s.size()) return false;
    auto c = static_cast<unsigned char>(s[i + k]);
    return c >= lo && c <= hi;
  };
  while (i < s.size()) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    if (b <= 0x7f) {
      len = 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      len = in(1, 0x80, 0xbf) ? 2 : 0;
    } else if (b == 0xe0) {
      len = in(1, 0xa0, 0xbf) && in(2, 0x80, 0xbf) ? 3 : 0;
    } else if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef) {
      len = in(1, 0x80, 0xbf) && in(2, 0x80, 0xbf) ? 3 : 0;
    } else if (b == 0xed) {
      len = in(1, 0x80, 0x9f) && in(2, 0x80, 0xbf) ? 3 : 0;
    } else if (b == 0xf0) {
      len = in(1, 0x90, 0xbf) && in(2, 0x80, 0xbf) && in(3, 0x80, 0xbf) ? 4 : 0;
    } else if (b >= 0xf1 && b <= 0xf3) {
      len = in(1, 0x80, 0xbf) && in(2, 0x80, 0xbf) && in(3, 0x80, 0xbf) ? 4 : 0;
    } else if (b == 0xf4) {
      len = in(1, 0x80, 0x8f) && in(2, 0x80, 0xbf) && in(3, 0x80, 0xbf) ? 4 : 0;
    }
    if (len == 0) return -1;
    i += len;
    ++n;
  }
  return n;
}

void check_rejection(std::string_view property, std::string_view input, const dblock::Error& e) {
  if (e.code() != dblock::ErrorCode::kInvalidArgument) fail(property, input, e.what());
  std::string_view what = e.what();
  if (what.size() > 512) fail("rejection messages stay short", input, what);
  for (unsigned char c : what) {
    if (c < 0x20 || c > 0x7e) fail("rejection messages are printable ASCII", input, what);
  }
}

void fuzz_identifier(std::string_view s) {
  bool accepted = true;
  try {
    dblock::validate_identifier(s, "identifier");
  } catch (const dblock::Error& e) {
    check_rejection("identifiers are rejected with kInvalidArgument", s, e);
    accepted = false;
  }
  if (accepted != oracle_identifier(s)) {
    fail("an identifier is accepted exactly when it matches the pattern", s,
         accepted ? "accepted" : "rejected");
  }
  if (!accepted) return;
  const std::string name(s);
  if (dblock::quote_identifier(dblock::Dialect::kPostgreSQL, s) != "\"" + name + "\"" ||
      dblock::quote_identifier(dblock::Dialect::kMySQL, s) != "`" + name + "`") {
    fail("an accepted identifier is quoted as is", s, "");
  }
}

void fuzz_table_names(std::string_view s) {
  auto bar = s.find('|');  // never part of a valid name
  std::string prefix(s.substr(0, bar));
  std::string schema(bar == std::string_view::npos ? std::string_view() : s.substr(bar + 1));
  const bool valid = (prefix.empty() || oracle_identifier(prefix)) &&
                     (schema.empty() || oracle_identifier(schema));
  try {
    dblock::TableNames names(prefix, schema);
    if (!valid) fail("TableNames rejects an invalid prefix or schema", s, "accepted");
    const bool table_ok = oracle_identifier(prefix + "locks");
    try {
      std::string q = names.qualified(dblock::Dialect::kPostgreSQL, "locks");
      if (!table_ok) fail("a table name too long or invalid is rejected", s, q);
      std::string expected = "\"" + prefix + "locks\"";
      if (!schema.empty()) expected = "\"" + schema + "\"." + expected;
      if (q != expected) fail("a table name is the quoted schema and prefixed name", s, q);
    } catch (const dblock::Error& e) {
      check_rejection("table names are rejected with kInvalidArgument", s, e);
      if (table_ok) fail("a valid table name is accepted", s, e.what());
    }
  } catch (const dblock::Error& e) {
    check_rejection("TableNames rejects with kInvalidArgument", s, e);
    if (valid) fail("TableNames accepts a valid prefix and schema", s, e.what());
  }
}

void fuzz_lock_key(std::string_view s) {
  long n = oracle_utf8_length(s);
  const bool valid = !s.empty() && s.find('\0') == std::string_view::npos && n >= 1 && n <= 255;
  bool accepted = true;
  try {
    dblock::validate_lock_key(s);
  } catch (const dblock::Error& e) {
    if (e.code() != dblock::ErrorCode::kInvalidArgument)
      fail("keys: kInvalidArgument", s, e.what());
    accepted = false;
  }
  if (accepted != valid) {
    fail("a key is accepted exactly when it is 1-255 characters of UTF-8 without NUL", s,
         accepted ? "accepted" : "rejected");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  fuzz_identifier(s);
  fuzz_table_names(s);
  fuzz_lock_key(s);
  // Long keys with multi-byte characters reach the 255-character limit from short inputs.
  if (!s.empty() && s.size() < 64) {
    std::string repeated;
    while (repeated.size() < 1100) repeated += s;
    fuzz_lock_key(repeated);
  }
  return 0;
}
