// SPDX-License-Identifier: Apache-2.0
#include "contention.hpp"

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "dblock/error.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "recorded_holder.hpp"
#include "resource.hpp"

namespace dblock::testing {

namespace {

using std::chrono::milliseconds;

struct Shared {
  std::mutex mu;
  ContentionStats stats;
  std::atomic<bool> stop{false};

  void count_error(const std::string& where, const Error& e) {
    std::lock_guard lock(mu);
    ++stats.errors[where + ":" + std::string(to_string(e.code()))];
  }
};

void client_loop(const ContentionOptions& o, const std::string& url, const std::string& client,
                 Shared& shared) {
  HistoryWriter history(o.history_dir + "/" + client + ".history");
  auto pool = open_pool(DatabaseUrl::parse(url), {.max_size = 2});
  auto lock = o.strategy->make(*pool, o.tables);
  while (!shared.stop) {
    std::string where = "acquire";
    try {
      RecordedHolder holder(*lock, history, client, o.key, o.ttl);
      if (!holder.acquire(milliseconds(200))) continue;
      {
        std::lock_guard l(shared.mu);
        ++shared.stats.acquired;
      }
      where = "section";
      if (o.strategy->transactional) {
        holder.in_transaction(
            [&](Connection& c) { return increment_counter(c, o.tables, client); });
      }
      std::this_thread::sleep_for(milliseconds(2));
      where = "release";
      std::string error;
      const std::string outcome = holder.release(&error);
      std::lock_guard l(shared.mu);
      if (outcome == "released") ++shared.stats.released;
      if (outcome == "decremented") ++shared.stats.decremented;
      if (outcome == "not_held") ++shared.stats.not_held;
      if (outcome == "conflict") ++shared.stats.conflicts;
      if (outcome == "error") {
        ++shared.stats.in_doubt;
        // The message carries the SQLSTATE and server error number (dblock::Error's what()).
        const bool certification = error.find("SQLSTATE 40001") != std::string::npos ||
                                   error.find("error 1213") != std::string::npos;
        ++shared.stats.errors[certification ? "release:deadlock" : "release:other"];
      }
    } catch (const Error& e) {
      shared.count_error(where, e);
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
}

void long_holder_loop(const ContentionOptions& o, Shared& shared) {
  HistoryWriter history(o.history_dir + "/long-holder.history");
  auto pool = open_pool(DatabaseUrl::parse(o.long_holder_url), {.max_size = 2});
  auto lock = o.strategy->make(*pool, o.tables);
  RecordedHolder holder(*lock, history, "long-holder", o.key + "-long", o.ttl);
  if (!holder.acquire(std::chrono::seconds(10))) {
    std::lock_guard l(shared.mu);
    ++shared.stats.errors["long-holder:not_acquired"];
    return;
  }
  while (!shared.stop) std::this_thread::sleep_for(milliseconds(10));
  // One renewal per TTL/3 is due; the history file counts the ones that succeeded.
  std::lock_guard l(shared.mu);
  shared.stats.long_holder_lost = holder.lost();
  shared.stats.long_holder_token = holder.token();
}

}  // namespace

long ContentionStats::errors_at(const std::string& where, const std::string& code) const {
  auto it = errors.find(where + ":" + code);
  return it == errors.end() ? 0 : it->second;
}

long ContentionStats::errors_total() const {
  long n = 0;
  for (const auto& [_, count] : errors) n += count;
  return n;
}

std::string ContentionStats::summary() const {
  std::string s = "acquired=" + std::to_string(acquired) + " released=" + std::to_string(released) +
                  " not_held=" + std::to_string(not_held) +
                  " conflicts=" + std::to_string(conflicts) +
                  " in_doubt=" + std::to_string(in_doubt) + " errors={";
  for (const auto& [what, count] : errors) s += " " + what + "=" + std::to_string(count);
  return s + " }";
}

ContentionStats run_contention(const ContentionOptions& o, const std::function<void()>& during) {
  Shared shared;
  std::vector<std::thread> threads;
  const int nodes = static_cast<int>(o.urls.size());
  for (int i = 0; i < o.clients; ++i) {
    // Every other client on a node goes through SOCI, the rest through the dialect's own
    // driver (libpqxx, libmysqlclient).
    const bool soci = (i / nodes) % 2 == 1;
    const std::string client =
        "c" + std::to_string(i) + "n" + std::to_string(i % nodes + 1) + (soci ? "-soci" : "");
    std::string url = o.urls[i % nodes];
    if (soci) url += (url.find('?') == std::string::npos ? "?" : "&") + std::string("driver=soci");
    shared.stats.histories.push_back(o.history_dir + "/" + client + ".history");
    threads.emplace_back([&o, &shared, client, url] {
      try {
        client_loop(o, url, client, shared);
      } catch (const std::exception& e) {
        std::lock_guard l(shared.mu);
        ++shared.stats.errors[std::string("client:") + e.what()];
      }
    });
  }
  if (!o.long_holder_url.empty()) {
    shared.stats.histories.push_back(o.history_dir + "/long-holder.history");
    threads.emplace_back([&] { long_holder_loop(o, shared); });
  }
  try {
    during();
  } catch (...) {
    shared.stop = true;
    for (auto& t : threads) t.join();
    throw;
  }
  shared.stop = true;
  for (auto& t : threads) t.join();
  if (!o.long_holder_url.empty()) {
    std::ifstream in(o.history_dir + "/long-holder.history");
    std::string line;
    while (std::getline(in, line))
      shared.stats.long_holder_renewals += line.rfind("renewed", 0) == 0;
  }
  return shared.stats;
}

HistoryReport check_history(const ContentionOptions& o, const ContentionStats& stats) {
  auto holds = load_holds(stats.histories, o.strategy->ends_with_ttl);
  return o.strategy->exclusive ? check_mutual_exclusion(holds) : check_compare_and_set(holds);
}

void prepare_tables(const std::string& url, const TableNames& tables) {
  const DatabaseUrl parsed = DatabaseUrl::parse(url);
  auto conn = open_connection(parsed);
  Migrator(*conn, tables).up();
  const std::string resource = tables.qualified(parsed.dialect, "resource");
  conn->execute("CREATE TABLE " + resource +
                " (id INT PRIMARY KEY, token BIGINT NOT NULL, writer VARCHAR(64) NOT NULL)");
  conn->execute("INSERT INTO " + resource + " (id, token, writer) VALUES (1, 0, '')");
}

}  // namespace dblock::testing
