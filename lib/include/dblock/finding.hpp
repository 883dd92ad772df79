// SPDX-License-Identifier: Apache-2.0
/// @file
/// What one check of check_deployment() found (Finding), and whose privileges it checks
/// (DoctorRole): the words of `dblock doctor` (doctor.hpp), in a header of their own so that
/// the checks behind check_deployment() can name them without it.
///
/// @code
///   dblock::Finding f{"privileges", dblock::Finding::Status::kFailure, "this user lacks ...", ""};
///   log(std::string(dblock::to_string(f.status)));                   // "failure"
///   log(std::string(dblock::to_string(dblock::DoctorRole::kCleaner)));  // "cleaner"
/// @endcode
///
/// Thread-safety: plain values; to_string() is safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "dblock/export.hpp"

namespace dblock {

/// One check's result: what it found, how it stands, and what to change.
struct Finding {
  enum class Status {
    kOk,       ///< the guarantee holds (or the check is informational)
    kWarning,  ///< holds, with a caveat worth acting on
    kFailure,  ///< a guarantee does not hold here
  };
  std::string check;  ///< "server", "writable", ... (as check_deployment() lists them)
  Status status = Status::kOk;
  std::string message;  ///< what was found
  std::string advice;   ///< what to change; empty when nothing
};

/// "ok", "warning" or "failure".
DBLOCK_EXPORT std::string_view to_string(Finding::Status status) noexcept;

/// What the user the connection logs in as is for: whose privileges "privileges" checks.
enum class DoctorRole {
  kApplication,  ///< takes locks: every strategy's statements, `dblock locks` and `release`
  kCleaner,      ///< runs `dblock clean`
  kMigrator,     ///< applies the migrations: creates and alters dblock's tables
};

/// "app", "cleaner" or "migrator".
DBLOCK_EXPORT std::string_view to_string(DoctorRole role) noexcept;

}  // namespace dblock
