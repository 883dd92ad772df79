// SPDX-License-Identifier: Apache-2.0
#include "driver_registry.hpp"

#include <array>
#include <atomic>

namespace dblock::detail {

namespace {

constexpr std::array<KnownDriver, 4> kDrivers = {{
    {"libpq", "dblock::postgresql", "dblock-postgresql", true, false},
    {"libpqxx", "dblock::libpqxx", "dblock-libpqxx", true, false},
    {"libmysqlclient", "dblock::mysql", "dblock-mysql", false, true},
    {"soci", "dblock::soci", "dblock-soci", true, true},
}};
constexpr std::size_t kDriverCount = kDrivers.size();

// One opener per known driver, in known_drivers() order. Zero-initialised before any static
// initializer runs, so a driver library may register from its own initializers in any order.
// Written only by registrations (at start-up or dlopen), read by open_connection().
constinit std::array<std::atomic<DriverOpen>, kDriverCount> g_openers{};

std::size_t index_of(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kDriverCount; ++i) {
    if (kDrivers[i].name == name) return i;
  }
  return kDriverCount;
}

}  // namespace

std::span<const KnownDriver> known_drivers() noexcept { return kDrivers; }

bool register_driver(std::string_view name, DriverOpen open) noexcept {
  const std::size_t i = index_of(name);
  if (i == kDriverCount) return false;
  g_openers[i].store(open, std::memory_order_release);
  return true;
}

DriverOpen registered_driver(std::string_view name) noexcept {
  const std::size_t i = index_of(name);
  if (i == kDriverCount) return nullptr;
  return g_openers[i].load(std::memory_order_acquire);
}

}  // namespace dblock::detail
