// SPDX-License-Identifier: Apache-2.0
#include "escaped_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dblock::detail {
namespace {

TEST(EscapedText, ControlsOnlyKeepsUtf8AndEscapesControlsAndDelete) {
  EXPECT_EQ(escaped_text("plain text", Bytes::kControlsOnly), "plain text");
  EXPECT_EQ(escaped_text("a\nb\tc\x7f", Bytes::kControlsOnly), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(escaped_text("caf\xc3\xa9", Bytes::kControlsOnly), "caf\xc3\xa9");
  EXPECT_EQ(escaped_text(std::string("a\0b", 3), Bytes::kControlsOnly), "a\\x00b");
}

TEST(EscapedText, AsciiOnlyEscapesEveryByteOutsidePrintableAscii) {
  EXPECT_EQ(escaped_text("plain ~text", Bytes::kAsciiOnly), "plain ~text");
  EXPECT_EQ(escaped_text("a\nb\x7f", Bytes::kAsciiOnly), "a\\x0ab\\x7f");
  EXPECT_EQ(escaped_text("caf\xc3\xa9", Bytes::kAsciiOnly), "caf\\xc3\\xa9");
  EXPECT_EQ(escaped_text("\xff\x80", Bytes::kAsciiOnly), "\\xff\\x80");
}

}  // namespace
}  // namespace dblock::detail
