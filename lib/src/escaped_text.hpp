// SPDX-License-Identifier: Apache-2.0
// Text quoted in an error message, kept to one printable line: control characters (and, where
// asked, every byte outside printable ASCII) written as \xNN. Internal.
//
//   escaped_text("a\nb", Bytes::kControlsOnly);  // "a\x0ab"; UTF-8 letters stay as they are
//   escaped_text("\xc3\xa9", Bytes::kAsciiOnly);  // "\xc3\xa9" as eight characters
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace dblock::detail {

enum class Bytes {
  kControlsOnly,  // 0x00-0x1f and 0x7f escaped; every other byte (UTF-8) kept
  kAsciiOnly,     // every byte outside 0x20-0x7e escaped
};

inline std::string escaped_text(std::string_view text, Bytes escape) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool kept = c >= 0x20 && (c < 0x7f || (c > 0x7f && escape == Bytes::kControlsOnly));
    if (kept) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace dblock::detail
