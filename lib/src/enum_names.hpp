// SPDX-License-Identifier: Apache-2.0
// The names of an enum's enumerators as one table in declaration order, for the to_string of
// an enum whose enumerators run 0, 1, 2, ... (no explicit values). The table is checked against
// the last enumerator when it is built, so an enumerator added without a name fails to compile.
// Internal.
//
//   constexpr auto kNames = detail::enum_names<Server::kMariaDB>({"postgresql", "mysql",
//   "mariadb"}); return kNames.of(server, "unknown");  // "unknown" for a value that is no
//   enumerator
//
// Thread-safety: constant data.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <type_traits>

namespace dblock::detail {

template <typename Enum, std::size_t N>
struct EnumNames {
  static_assert(std::is_enum_v<Enum>);
  std::array<std::string_view, N> names;

  // The name of `value`, or `fallback` when `value` is no enumerator of the table.
  constexpr std::string_view of(Enum value, std::string_view fallback) const noexcept {
    // A negative value wraps past N.
    const auto index = static_cast<std::make_unsigned_t<std::underlying_type_t<Enum>>>(value);
    return index < N ? names[index] : fallback;
  }
};

// The table of `names`, one per enumerator from the first to `kLast`.
template <auto kLast, std::size_t N>
consteval EnumNames<decltype(kLast), N> enum_names(const std::string_view (&names)[N]) {
  static_assert(static_cast<std::size_t>(kLast) + 1 == N, "one name for every enumerator");
  EnumNames<decltype(kLast), N> table{};
  for (std::size_t i = 0; i < N; ++i) table.names[i] = names[i];
  return table;
}

}  // namespace dblock::detail
