// SPDX-License-Identifier: Apache-2.0
// Fuzzes DatabaseUrl::parse and DatabaseUrl::redacted(). Every input is tried twice:
//
// As a raw URL:
// - parse either returns or throws dblock::Error(kInvalidArgument) with one line of printable
//   text;
// - a parsed URL's redacted() form parses back to the same URL (every host of a PostgreSQL host
//   list, socket directories included), with "***" for a password and for libpq's sslpassword;
// - redacted() does not depend on the password (only on whether there is one), and never
//   contains it.
//
// As user:PASSWORD@rest, where the password is built from the letter 'Q' and URL delimiters and
// no 'Q' occurs anywhere else: neither an error message nor a parsed URL's redacted() form may
// contain a 'Q', so no piece of a password ever shows, even one with unescaped '/', '?' or '@'.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dblock/error.hpp"
#include "dblock/url.hpp"

namespace {

[[noreturn]] void fail(std::string_view property, std::string_view input, std::string_view got) {
  std::cerr << "property violated: " << property << "\ninput: " << input << "\ngot: " << got
            << "\n";
  std::abort();
}

void check_message(std::string_view input, const dblock::Error& e) {
  if (e.code() != dblock::ErrorCode::kInvalidArgument) {
    fail("parse fails only with kInvalidArgument", input, e.what());
  }
  for (unsigned char c : std::string_view(e.what())) {
    if (c < 0x20 || c == 0x7f)
      fail("error messages are one line of printable text", input, e.what());
  }
}

// The parameters with libpq's sslpassword (a secret redacted() hides too) as "***".
std::vector<std::pair<std::string, std::string>> masked(const dblock::DatabaseUrl& url) {
  auto out = url.params;
  for (auto& [name, value] : out) {
    if (name == "sslpassword") value = "***";
  }
  return out;
}

bool same_except_password(const dblock::DatabaseUrl& a, const dblock::DatabaseUrl& b) {
  return a.dialect == b.dialect && a.user == b.user && a.host == b.host && a.port == b.port &&
         a.more_hosts == b.more_hosts && a.database == b.database && a.driver == b.driver &&
         a.transaction_pooler == b.transaction_pooler && masked(a) == masked(b);
}

void check_parsed(std::string_view input, const dblock::DatabaseUrl& url) {
  const std::string redacted = url.redacted();
  dblock::DatabaseUrl again;
  try {
    again = dblock::DatabaseUrl::parse(redacted);
  } catch (const dblock::Error& e) {
    fail("redacted() parses back", input, redacted + " -> " + e.what());
  }
  if (!same_except_password(url, again)) fail("redacted() parses back unchanged", input, redacted);
  if (again.password != (url.password.empty() ? "" : "***")) {
    fail("redacted() shows '***' for a password", input, redacted);
  }
  dblock::DatabaseUrl other = url;
  other.password = url.password.empty() ? "" : "different";
  if (other.redacted() != redacted) {
    fail("redacted() does not depend on the password", input, redacted);
  }
  // Short passwords, and ones made of the text around "***", can occur by chance.
  if (url.password.size() >= 3 && url.password.find_first_of("*:@") == std::string::npos) {
    dblock::DatabaseUrl none = url;
    none.password.clear();
    if (none.redacted().find(url.password) == std::string::npos &&
        redacted.find(url.password) != std::string::npos) {
      fail("redacted() never contains the password", input, redacted);
    }
  }
}

void fuzz_raw(std::string_view input) {
  try {
    check_parsed(input, dblock::DatabaseUrl::parse(input));
  } catch (const dblock::Error& e) {
    check_message(input, e);
  }
}

// user:PASSWORD@rest with the password marked by 'Q', a letter no other part contains.
void fuzz_password(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  static constexpr char kPasswordChars[] = "Q/?#@:[]&=.Q";
  const std::string scheme = data[0] & 1 ? "mysql://" : "postgresql://";
  std::string parts[3];
  int part = 0;
  for (std::size_t i = 1; i < size; ++i) {
    char c = static_cast<char>(data[i]);
    if (c == '\n' && part < 2) {
      ++part;
      continue;
    }
    if (part == 1) {
      parts[1] += kPasswordChars[data[i] % (sizeof kPasswordChars - 1)];
    } else {
      // Neither a 'Q' nor an escape that decodes to one.
      parts[part] += c == 'Q' ? 'q' : c == '%' ? '_' : c;
    }
  }
  const std::string url = scheme + parts[0] + ":Q" + parts[1] + "@" + parts[2];
  try {
    auto parsed = dblock::DatabaseUrl::parse(url);
    if (parsed.redacted().find('Q') != std::string::npos) {
      fail("no piece of the password shows in redacted()", url, parsed.redacted());
    }
  } catch (const dblock::Error& e) {
    check_message(url, e);
    if (std::string_view(e.what()).find('Q') != std::string_view::npos) {
      fail("no piece of the password shows in an error", url, e.what());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_raw(std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz_password(data, size);
  return 0;
}
