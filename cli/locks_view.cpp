// SPDX-License-Identifier: Apache-2.0
#include "locks_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "locks_metrics.hpp"

namespace dblock::cli {

namespace {

// A lock or a permit, as one line of the view.
struct Entry {
  const LockRow* row;
  const PermitRow* permit;  // null for a lock
};

// By key, byte for byte (the servers' collations differ); a key's lock before its permits,
// permits by slot.
std::vector<Entry> entries_by_key(const LockTableView& view) {
  std::vector<Entry> out;
  out.reserve(view.locks.size() + view.permits.size());
  for (const LockRow& row : view.locks) out.push_back({&row, nullptr});
  for (const PermitRow& permit : view.permits) out.push_back({&permit.lock, &permit});
  std::stable_sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) {
    if (a.row->key != b.row->key) return a.row->key < b.row->key;
    const std::int64_t slot_a = a.permit ? a.permit->slot : -1;
    const std::int64_t slot_b = b.permit ? b.permit->slot : -1;
    return slot_a < slot_b;
  });
  return out;
}

std::map<std::string, std::int64_t> waiters_by_key(const std::vector<WaiterQueue>& queues) {
  std::map<std::string, std::int64_t> out;
  for (const WaiterQueue& q : queues) out[q.key] = q.waiters;
  return out;
}

std::int64_t waiting(const std::map<std::string, std::int64_t>& waiters, const std::string& key) {
  auto it = waiters.find(key);
  return it == waiters.end() ? 0 : it->second;
}

// How long ago `time` was at `now`; "?" when either is unknown.
std::string since(const std::optional<double>& now, const std::string& time) {
  const auto at = parse_utc(time);
  if (!now || !at) return "?";
  return format_span(*now - *at);
}

std::string expires_in(const std::optional<double>& now, const LockRow& r) {
  if (r.expires_at == "never") return "never";
  const auto at = parse_utc(r.expires_at);
  if (!now || !at) return "?";
  return r.expired ? format_span(*now - *at) + " ago" : format_span(*at - *now);
}

}  // namespace

LockTableView read_lock_table(Connection& conn, const TableNames& tables,
                              const std::string& key_prefix) {
  LockTableView view;
  view.now = database_now(conn);
  view.locks = list_locks(conn, tables, key_prefix);
  view.permits = list_permits(conn, tables, key_prefix);
  view.queues = list_waiter_queues(conn, tables, key_prefix);
  return view;
}

nlohmann::json lock_json(const LockRow& row, std::int64_t waiters) {
  nlohmann::json metadata = nullptr;
  if (!row.metadata.empty()) {
    metadata = nlohmann::json::parse(row.metadata, nullptr, /*allow_exceptions=*/false);
    if (metadata.is_discarded()) metadata = row.metadata;  // not JSON after all: keep the text
  }
  return {{"key", row.key},
          {"lease_id", row.lease_id},
          {"owner_host", row.owner_host},
          {"owner_process", row.owner_process},
          {"owner_thread", row.owner_thread},
          {"hold_count", row.hold_count},
          {"fencing_token", row.fencing_token},
          {"acquired_at", row.acquired_at},
          {"expires_at", row.expires_at},
          {"expired", row.expired},
          {"metadata", std::move(metadata)},
          {"waiters", waiters},
          {"kind", "lock"}};
}

nlohmann::json permit_json(const PermitRow& permit) {
  nlohmann::json out = lock_json(permit.lock, 0);
  out["kind"] = "permit";
  out["slot"] = permit.slot;
  out["permits"] = permit.permits;
  return out;
}

std::optional<std::string> shortened_time(const std::string& time, std::size_t length) {
  if (time.size() < length || time.size() < 11 || time[10] != 'T') return std::nullopt;
  std::string out = time.substr(0, length);
  out[10] = ' ';
  return out;
}

std::string owner_of(const LockRow& r) {
  return r.owner_host + "/" + r.owner_process + "/" + r.owner_thread;
}

std::string state_of(const LockRow& r) {
  if (r.expired) return "expired";
  if (r.expires_at == "never") return "claimed";
  return r.hold_count == 0 ? "finished" : "held";
}

std::string format_span(double seconds) {
  const double ms_total = std::isfinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
  const auto ms = static_cast<long long>(std::floor(ms_total));
  char buf[48];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  } else if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%lld.%llds", ms / 1000, ms % 1000 / 100);
  } else if (const long long s = ms / 1000; s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else if (s < 86'400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86'400, s % 86'400 / 3600);
  }
  return buf;
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(byte));
      out += buf;
    }
  }
  return out;
}

std::string render_frame(const LockTableView& view, const std::string& header) {
  const std::optional<double> now = parse_utc(view.now);
  const auto waiters = waiters_by_key(view.queues);
  std::string out = header + "\n\n";
  const std::vector<Entry> entries = entries_by_key(view);
  if (entries.empty()) {
    out += "no locks held\n";
  } else {
    std::vector<std::array<std::string, 8>> lines{
        {"KIND", "KEY", "HOLDER", "TOKEN", "HELD", "EXPIRES IN", "STATE", "WAITERS"}};
    for (const Entry& e : entries) {
      const LockRow& r = *e.row;
      std::string kind = "lock";
      std::string queued = std::to_string(waiting(waiters, r.key));
      if (e.permit) {
        kind = "permit " + std::to_string(e.permit->slot + 1) + "/" +
               std::to_string(e.permit->permits);
        queued = "-";  // semaphores have no fair queue
      }
      lines.push_back({std::move(kind), printable(r.key), printable(owner_of(r)),
                       std::to_string(r.fencing_token),
                       r.expired ? std::string("-") : since(now, r.acquired_at), expires_in(now, r),
                       state_of(r), std::move(queued)});
    }
    out += format_columns(lines);
  }
  if (!view.queues.empty()) {
    std::vector<std::array<std::string, 4>> lines{
        {"QUEUED FOR", "WAITERS", "NEXT IN LINE", "WAITING"}};
    for (const WaiterQueue& q : view.queues) {
      lines.push_back({printable(q.key), std::to_string(q.waiters),
                       printable(q.head_host + "/" + q.head_process + "/" + q.head_thread),
                       since(now, q.head_since)});
    }
    out += "\n" + format_columns(lines);
  }
  return out;
}

std::string render_error_frame(const std::string& header, const std::string& what,
                               const std::string& last_good) {
  std::string out = header + "\n\nerror: " + printable(what) + "\n";
  out += "last refreshed: " +
         (last_good.empty() ? std::string("never") : last_good + " (database clock)") +
         "; trying again each interval\n";
  return out;
}

nlohmann::json frame_json(const LockTableView& view, const std::string& url,
                          std::int64_t interval_ms, const std::optional<std::string>& key_prefix) {
  const auto waiters = waiters_by_key(view.queues);
  nlohmann::json locks = nlohmann::json::array();
  for (const Entry& e : entries_by_key(view)) {
    locks.push_back(e.permit ? permit_json(*e.permit)
                             : lock_json(*e.row, waiting(waiters, e.row->key)));
  }
  nlohmann::json queues = nlohmann::json::array();
  for (const WaiterQueue& q : view.queues) {
    queues.push_back({{"key", q.key},
                      {"waiters", q.waiters},
                      {"head_host", q.head_host},
                      {"head_process", q.head_process},
                      {"head_thread", q.head_thread},
                      {"head_since", q.head_since}});
  }
  return {{"time", view.now},
          {"clock", "database"},
          {"url", url},
          {"interval_ms", interval_ms},
          {"key_prefix", key_prefix ? nlohmann::json(*key_prefix) : nlohmann::json()},
          {"locks", std::move(locks)},
          {"waiter_queues", std::move(queues)},
          {"error", nullptr}};
}

nlohmann::json error_json(const std::string& local_time, const std::string& what,
                          const std::string& url, std::int64_t interval_ms,
                          const std::optional<std::string>& key_prefix) {
  return {{"time", local_time},
          {"clock", "local"},
          {"url", url},
          {"interval_ms", interval_ms},
          {"key_prefix", key_prefix ? nlohmann::json(*key_prefix) : nlohmann::json()},
          {"error", what}};
}

std::string fit_to_terminal(const std::string& frame, std::size_t columns, std::size_t rows) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < frame.size();) {
    std::size_t end = frame.find('\n', at);
    if (end == std::string::npos) end = frame.size();
    lines.push_back(frame.substr(at, end - at));
    at = end + 1;
  }
  if (rows > 0 && lines.size() > rows) {
    const std::size_t left_out = lines.size() - (rows - 1);
    lines.resize(rows - 1);
    lines.push_back("... " + std::to_string(left_out) +
                    " more lines: narrow the view with --key-prefix");
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::size_t chars = 0, end = 0;
    for (; end < line.size(); ++end) {
      const bool starts_char = (static_cast<unsigned char>(line[end]) & 0xC0) != 0x80;
      if (starts_char && columns > 0 && ++chars > columns) break;
    }
    if (i > 0) out += '\n';
    out += line.substr(0, end) + "\x1b[K";
  }
  return out;
}

}  // namespace dblock::cli
