// SPDX-License-Identifier: Apache-2.0
// Adds the soci driver to core's registry when the program starts, so open_connection() and
// open_pool() can use it (driver_registry.hpp).
#include "dblock/export.hpp"
#include "dblock/soci.hpp"
#include "driver_registry.hpp"

// The anchor dblock::soci's link options name with `-u`: a static link keeps this file for it.
extern "C" DBLOCK_EXPORT void dblock_driver_soci() {}

namespace {
[[maybe_unused]] const bool kRegistered =
    dblock::detail::register_driver("soci", &dblock::connect_soci);
}  // namespace
