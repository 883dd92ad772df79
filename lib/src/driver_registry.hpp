// SPDX-License-Identifier: Apache-2.0
// The drivers linked into this program, for open_connection() and available_drivers(). Internal.
//
//   // lib/src/drivers/libpq/register.cpp, in the dblock::postgresql library:
//   extern "C" DBLOCK_EXPORT void dblock_driver_libpq() {}
//   namespace { const bool kRegistered = detail::register_driver("libpq", &connect_libpq); }
//
// Core knows every driver dblock has (name, the dialects it serves, the library that holds it),
// but not the drivers themselves: each driver library adds its opener here from a static
// initializer when the program starts. The registration file also defines an extern "C" anchor
// function that the library's link options (CMake INTERFACE_LINK_OPTIONS, pkg-config Libs)
// name with `-u`, so a static link keeps the file although no code calls into it. A URL whose
// driver is not linked gets an error naming the library to link.
//
// Thread-safety: register_driver() may run during static initialisation or from dlopen() on any
// thread; the lookups are safe from any thread at any time.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "dblock/connection.hpp"
#include "dblock/url.hpp"

// Exported from a shared libdblock_core for dblock's driver libraries; not public API.
#pragma GCC visibility push(default)

namespace dblock::detail {

using DriverOpen = std::unique_ptr<Connection> (*)(const DatabaseUrl& url);

// A driver dblock has, linked or not.
struct KnownDriver {
  std::string_view name;       // what ?driver= says: "libpq"
  std::string_view target;     // the CMake target that holds it: "dblock::postgresql"
  std::string_view pkgconfig;  // its pkg-config module: "dblock-postgresql"
  bool postgresql;             // the dialects it serves
  bool mysql;
};

// Every driver dblock has, each dialect's default first: libpq, libpqxx, libmysqlclient, soci.
std::span<const KnownDriver> known_drivers() noexcept;

// Makes `open` the opener of the driver called `name` (one of known_drivers()). Returns false,
// and changes nothing, for a name dblock does not know. Registering a name again replaces its
// opener.
bool register_driver(std::string_view name, DriverOpen open) noexcept;

// The opener registered for `name`, or nullptr when that driver is not linked.
DriverOpen registered_driver(std::string_view name) noexcept;

}  // namespace dblock::detail

#pragma GCC visibility pop
