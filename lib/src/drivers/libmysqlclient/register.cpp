// SPDX-License-Identifier: Apache-2.0
// Adds the libmysqlclient driver to core's registry when the program starts, so open_connection()
// and open_pool() can use it (driver_registry.hpp).
#include "dblock/export.hpp"
#include "dblock/libmysqlclient.hpp"
#include "driver_registry.hpp"

// The anchor dblock::mysql's link options name with `-u`: a static link keeps this file for it.
extern "C" DBLOCK_EXPORT void dblock_driver_libmysqlclient() {}

namespace {
[[maybe_unused]] const bool kRegistered =
    dblock::detail::register_driver("libmysqlclient", &dblock::connect_mysql);
}  // namespace
