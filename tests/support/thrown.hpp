// SPDX-License-Identifier: Apache-2.0
// The dblock::Error a call throws, for the tests of every suite: error_of() hands it over (or
// nothing, when the call returned), expect_error() checks its code and the words it must say.
//
//   expect_error([&] { migrator.verify(); }, ErrorCode::kUndefinedTable, "dblock migrate up",
//                "verified an empty database");
//
// Thread-safety: as GoogleTest's assertions.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string_view>

#include "dblock/error.hpp"

namespace dblock {

// The Error `call` throws; nothing when it returns. Other exceptions pass through.
inline std::optional<Error> error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// Checks that `call` throws an Error of `code` whose message contains `words`; when it returns
// instead, the failure says `if_returned`.
inline void expect_error(const std::function<void()>& call, ErrorCode code, std::string_view words,
                         std::string_view if_returned) {
  const std::optional<Error> e = error_of(call);
  ASSERT_TRUE(e.has_value()) << if_returned;
  EXPECT_EQ(e->code(), code) << e->what();
  EXPECT_NE(std::string_view(e->what()).find(words), std::string_view::npos) << e->what();
}

}  // namespace dblock
