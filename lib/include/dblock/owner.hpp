// SPDX-License-Identifier: Apache-2.0
/// @file
/// Who holds a lock: host, process instance and thread, stored in the lock row's owner columns.
/// Reentrancy and every owner check (release, renew) compare all three.
///
/// The default owner is the calling OS thread. Work that moves between threads (coroutines,
/// thread pools, async callbacks) names its owner instead, and reentrancy follows that name.
///
/// The process instance is the pid plus a random id drawn once per process (and again in a
/// forked child), so a restarted process that reuses a pid is a different owner.
///
/// Thread-safety: Owner is a plain value; the functions are safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

struct DBLOCK_EXPORT Owner {
  std::string host;
  std::string process;
  std::string thread;

  /// The calling thread of this process on this host.
  static Owner current_thread();
  /// An owner named by the caller, in this process on this host. Throws Error(kInvalidArgument)
  /// for an empty name or one over 200 bytes.
  static Owner named(std::string_view name);

  /// "host/process/thread", for messages and logs.
  std::string to_string() const;

  bool operator==(const Owner&) const = default;
};

/// This process's instance id, "<pid>-<16 hex digits>".
DBLOCK_EXPORT std::string process_instance();

}  // namespace dblock
