// SPDX-License-Identifier: Apache-2.0
// `dblock locks --prometheus FILE`: the lock table's state as gauges for node_exporter's textfile
// collector (the format and file handling of prometheus.hpp): rows held and expired-not-cleaned
// by kind, the age of the oldest expired row (how far the cleaner is behind), and the fair
// waiters queued per key.
//
// Thread-safety: a pure function of its arguments, but for the file it writes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dblock/lock_table.hpp"
#include "prometheus.hpp"

namespace dblock::cli {

// The metrics of `locks`, `permits` and `waiters` (as list_locks, list_permits and
// queued_waiters return them) at `now` (seconds since the Unix epoch).
Metrics lock_table_metrics(const std::vector<LockRow>& locks, const std::vector<PermitRow>& permits,
                           const std::map<std::string, std::int64_t>& waiters, double now);

// Seconds since the Unix epoch of a UTC time as list_locks writes it
// ("2024-05-01T12:00:00.123456Z"); nullopt for anything else ("never").
std::optional<double> parse_utc(const std::string& time);

}  // namespace dblock::cli
