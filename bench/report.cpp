// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace dblock::bench {

namespace {

std::string format(double v, const std::string& unit) {
  char buf[64];
  if (unit == "x") {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  } else if (v >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (v >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return std::string(buf) + (unit == "x" ? "" : " " + unit);
}

std::string pad(const std::string& s, std::size_t width) {
  // Widths count bytes; the labels are ASCII.
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

const char* verdict(int met) { return met == 1 ? "met" : met == 0 ? "NOT MET" : ""; }

double num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// One line per connection count of a dblock / raw comparison (compare.hpp's JSON).
void print_comparison(std::ostream& out, const std::string& title, const nlohmann::json& points) {
  out << "\n" << title << "\n";
  out << "  conns   raw pairs/s  raw p50/p99       dblock pairs/s  dblock p50/p99    ratio\n";
  for (const auto& p : points) {
    char line[200];
    std::snprintf(line, sizeof line, "  %5d  %12.0f  %6.3f/%-8.3f  %14.0f  %6.3f/%-8.3f  %.3f\n",
                  p["connections"].get<int>(), num(p["raw"], "ops_per_s"), num(p["raw"], "p50_ms"),
                  num(p["raw"], "p99_ms"), num(p["dblock"], "ops_per_s"),
                  num(p["dblock"], "p50_ms"), num(p["dblock"], "p99_ms"),
                  num(p, "ratio_dblock_vs_raw"));
    out << line;
  }
}

// One line per hot-key point (HotKeyResult::to_json).
void print_hot_key(std::ostream& out, const std::string& title, const nlohmann::json& points) {
  out << "\n" << title << "\n";
  out << "  mode                  clients  acq/s    handoff p50/p99 ms  release p50  re-took  "
         "stmts/acq  fairness max/min\n";
  for (const auto& p : points) {
    std::string mode = p["mode"].get<std::string>();
    if (p.value("lock_per_client", false)) mode += " apart";
    if (p.contains("between_holds_ms") && num(p, "between_holds_ms") > 0) {
      char gap[32];
      std::snprintf(gap, sizeof gap, " +%gms", num(p, "between_holds_ms"));
      mode += gap;
    }
    char line[240];
    std::snprintf(
        line, sizeof line, "  %-20s  %7d  %7.0f  %8.3f/%-9.3f  %11.3f  %6.0f%%  %9.2f  %s\n",
        mode.c_str(), p["clients"].get<int>(), num(p, "acquisitions_per_s"),
        num(p["handoff"], "p50_ms"), num(p["handoff"], "p99_ms"), num(p["release"], "p50_ms"),
        100 * num(p, "reacquired_by_previous_holder"), num(p, "statements_per_acquisition"),
        p["fairness_max_over_min"].is_number()
            ? format(p["fairness_max_over_min"].get<double>(), "x").c_str()
            : "inf (a client got none)");
    out << line;
  }
}

}  // namespace

nlohmann::json headlines_json(const std::vector<Headline>& headlines) {
  nlohmann::json out = nlohmann::json::array();
  for (const Headline& h : headlines) {
    nlohmann::json j{{"label", h.label}, {"database", h.database}, {"unit", h.unit}};
    j[h.ratio ? "ratio" : "value"] = h.value;
    if (!h.target.empty()) {
      j["target"] = h.target;
      j["met"] = h.met == 1;
    }
    out.push_back(j);
  }
  return out;
}

HeadlineRows headline_rows(const std::vector<Headline>& headlines, bool ratios) {
  HeadlineRows rows;
  for (const auto& h : headlines) {
    if (h.ratio != ratios) continue;
    if (!rows.cells.contains(h.label)) rows.labels.push_back(h.label);
    rows.cells[h.label][h.database] = &h;
  }
  return rows;
}

void print_table(std::ostream& out, const std::vector<Headline>& headlines,
                 const nlohmann::json& document) {
  std::vector<std::string> databases;
  for (const auto& h : headlines) {
    if (std::find(databases.begin(), databases.end(), h.database) == databases.end()) {
      databases.push_back(h.database);
    }
  }
  // One row per label, one column per database; ratios first, then figures, in run order.
  for (bool ratios : {true, false}) {
    auto [labels, cells] = headline_rows(headlines, ratios);
    if (labels.empty()) continue;
    out << "\n" << (ratios ? "Ratios" : "Figures") << "\n";
    std::string header = pad("", 46);
    for (const auto& d : databases) header += pad(d, 30);
    out << header << "target\n";
    for (const auto& label : labels) {
      std::string line = pad(label, 46);
      std::string target;
      for (const auto& d : databases) {
        auto it = cells[label].find(d);
        if (it == cells[label].end()) {
          line += pad("-", 30);
          continue;
        }
        const Headline& h = *it->second;
        std::string cell = format(h.value, h.unit);
        if (h.met >= 0) cell += std::string(" (") + verdict(h.met) + ")";
        line += pad(cell, 30);
        if (!h.target.empty()) target = h.target;
      }
      out << line << target << "\n";
    }
  }

  // The curves behind the chart.
  for (const auto& [db, section] : document["databases"].items()) {
    if (section.contains("uncontended")) {
      print_comparison(out, db + ": uncontended acquire+release (pairs/s; p50/p99 ms)",
                       section["uncontended"]["points"]);
    }
    if (section.contains("row_lock")) {
      print_comparison(out,
                       db + ": row lock, uncontended try_acquire+release (pairs/s; p50/p99 ms)",
                       section["row_lock"]["uncontended"]["points"]);
    }
    if (section.contains("optimistic")) {
      print_comparison(out, db + ": optimistic, uncontended acquire+release (pairs/s; p50/p99 ms)",
                       section["optimistic"]["uncontended"]["points"]);
    }
    if (section.contains("semaphore")) {
      print_comparison(out,
                       db + ": semaphore, uncontended try_acquire+release (pairs/s; p50/p99 ms)",
                       section["semaphore"]["points"]);
    }
    if (section.contains("read_write_lock")) {
      for (const char* side : {"reader", "writer"}) {
        nlohmann::json points = nlohmann::json::array();
        for (const auto& p : section["read_write_lock"]["points"]) {
          if (p.value("side", "") == side) points.push_back(p);
        }
        print_comparison(out,
                         db + ": reader-writer lock, uncontended " + side +
                             " try_acquire+release (pairs/s; p50/p99 ms)",
                         points);
      }
    }
    if (section.contains("semaphore_contended")) {
      out << "\n" << db << ": semaphore, contended (blocking acquire, ~1 ms hold)\n";
      out << "  permits  clients  wake            cycles/s  wait p50/p99 ms    stmts/acq  timed out"
             "  max holders\n";
      for (const auto& c : section["semaphore_contended"]["runs"]) {
        const std::string wake = std::string(c["notify"].get<bool>() ? "notify" : "poll") +
                                 (c["lock_per_client"].get<bool>() ? ", apart" : "");
        char line[200];
        std::snprintf(line, sizeof line,
                      "  %7d  %7d  %-14s  %8.0f  %7.3f/%-9.3f  %9.2f  %9.0f  %11d\n",
                      c["permits"].get<int>(), c["clients"].get<int>(), wake.c_str(),
                      num(c, "ops_per_s"), num(c["acquire_wait"], "p50_ms"),
                      num(c["acquire_wait"], "p99_ms"), num(c, "statements_per_acquisition"),
                      num(c, "timed_out"), c["max_concurrent_holders_seen"].get<int>());
        out << line;
      }
    }
    if (section.contains("read_write_lock_contended")) {
      out << "\n" << db << ": reader-writer lock, contended (16 clients, a lock each, 4 writers)\n";
      out << "  wake    cycles/s  wait p50/p99 ms    reader p99  writer p99  timed out\n";
      for (const auto& c : section["read_write_lock_contended"]["runs"]) {
        char line[200];
        std::snprintf(line, sizeof line, "  %-6s  %8.0f  %7.3f/%-9.3f  %10.3f  %10.3f  %9.0f\n",
                      c["notify"].get<bool>() ? "notify" : "poll", num(c, "ops_per_s"),
                      num(c["acquire_wait"], "p50_ms"), num(c["acquire_wait"], "p99_ms"),
                      num(c["reader_wait"], "p99_ms"), num(c["writer_wait"], "p99_ms"),
                      num(c, "timed_out"));
        out << line;
      }
    }
    if (section.contains("hot_key")) {
      print_hot_key(out,
                    db + ": hot key, blocking acquire (handoff = release start to the next grant "
                         "to a waiting client; apart: a lock object per client, or for raw a "
                         "libpq session per client that listens itself; +1ms: 1 ms of work "
                         "between holds)",
                    section["hot_key"]["points"]);
    }
    if (section.contains("row_lock")) {
      print_hot_key(out, db + ": row lock hot key, blocking acquire (the server wakes the next)",
                    section["row_lock"]["hot_key"]["points"]);
    }
    if (section.contains("optimistic")) {
      const auto& c = section["optimistic"]["contended"];
      out << "\n" << db << ": optimistic, contended counter (with_lock, retries on conflict)\n";
      out << "  clients  commits/s  conflicts/commit  attempts/commit p50/p99  gave up\n";
      char line[200];
      std::snprintf(line, sizeof line, "  %7d  %9.0f  %16.2f  %10.0f/%-12.0f  %7.0f\n",
                    c["clients"].get<int>(), num(c, "commits_per_s"),
                    num(c, "conflicts_per_commit"), num(c["attempts_per_commit"], "p50"),
                    num(c["attempts_per_commit"], "p99"), num(c, "gave_up"));
      out << line;
    }
  }
}

}  // namespace dblock::bench
