// SPDX-License-Identifier: Apache-2.0
#include "locks_metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>

namespace dblock::cli {

std::optional<double> parse_utc(const std::string& time) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, used = 0;
  if (std::sscanf(time.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &used) != 6) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  double fraction = 0;
  if (static_cast<std::size_t>(used) < time.size() && time[static_cast<std::size_t>(used)] == '.') {
    fraction = std::strtod(time.c_str() + used, nullptr);
  }
  return static_cast<double>(::timegm(&tm)) + fraction;
}

Metrics lock_table_metrics(const std::vector<LockRow>& locks, const std::vector<PermitRow>& permits,
                           const std::map<std::string, std::int64_t>& waiters, double now) {
  Metrics m;
  auto& held = m["dblock_locks_held"];
  held = {"Rows held now (claims and rows kept taken for their min_hold included), by kind.",
          "gauge",
          {{"kind=\"lock\"", 0}, {"kind=\"permit\"", 0}}};
  auto& expired = m["dblock_locks_expired"];
  expired = {"Expired rows the cleaner has not deleted yet, by kind.",
             "gauge",
             {{"kind=\"lock\"", 0}, {"kind=\"permit\"", 0}}};
  auto& oldest = m["dblock_locks_oldest_expired_age_seconds"];
  oldest = {"How long ago the oldest expired row not yet deleted expired (0: none), by kind.",
            "gauge",
            {{"kind=\"lock\"", 0}, {"kind=\"permit\"", 0}}};
  const auto count = [&](const LockRow& row, const std::string& kind) {
    if (!row.expired) {
      held.series[kind] += 1;
      return;
    }
    expired.series[kind] += 1;
    if (auto at = parse_utc(row.expires_at)) {
      oldest.series[kind] = std::max(oldest.series[kind], std::max(0.0, now - *at));
    }
  };
  for (const LockRow& row : locks) count(row, "kind=\"lock\"");
  for (const PermitRow& permit : permits) count(permit.lock, "kind=\"permit\"");
  auto& queued = m["dblock_lock_waiters"];
  queued = {"Fair waiters queued, by key (keys with none left out).", "gauge", {}};
  for (const auto& [key, n] : waiters) {
    queued.series["key=\"" + escape_label_value(key) + "\""] = static_cast<double>(n);
  }
  return m;
}

}  // namespace dblock::cli
