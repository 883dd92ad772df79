// SPDX-License-Identifier: Apache-2.0
#include "ha_fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "dblock/open.hpp"

#ifndef DBLOCK_SOURCE_DIR
#error "DBLOCK_SOURCE_DIR must name the source tree"
#endif

namespace dblock::testing {

namespace {

std::unique_ptr<ClusterScript>& galera_slot() {
  static std::unique_ptr<ClusterScript> cluster;
  return cluster;
}

// Stops the clusters once every test has run.
class ClusterEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { galera_slot().reset(); }
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

bool on_galera(const std::string& url) { return url.rfind("mysql://", 0) == 0; }

}  // namespace

ClusterScript& galera_cluster() {
  auto& slot = galera_slot();
  if (!slot) {
    slot = std::make_unique<ClusterScript>(DBLOCK_SOURCE_DIR "/scripts/ha-galera.sh", "GALERA_DIR");
  }
  return *slot;
}

std::vector<std::string> galera_urls() {
  auto& c = galera_cluster();
  return {c.env("DBLOCK_HA_GALERA_URL1"), c.env("DBLOCK_HA_GALERA_URL2"),
          c.env("DBLOCK_HA_GALERA_URL3")};
}

std::string unique_prefix() {
  static std::atomic<int> n{0};
  return "ha" + std::to_string(::getpid()) + "_" + std::to_string(++n) + "_";
}

void HaTest::SetUp() {
  tables_ = TableNames(unique_prefix());
  char dir[] = "/tmp/dblock-ha-history-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  history_dir_ = dir;
}

void HaTest::TearDown() {
  // Histories of a failed test stay behind for a look.
  if (!HasFailure()) std::filesystem::remove_all(history_dir_);
}

void HaTest::figures(const std::string& line) {
  std::printf("[  figures ] %s\n", line.c_str());
  std::fflush(stdout);
}

Finding doctor_finding(const std::string& url, const TableNames& tables, const std::string& check) {
  auto conn = open_connection(DatabaseUrl::parse(url));
  for (auto& f : check_deployment(*conn, tables)) {
    if (f.check == check) return f;
  }
  ADD_FAILURE() << "dblock doctor gave no finding '" << check << "'";
  return {};
}

LockRow read_lock_row(const std::string& url, const TableNames& tables, const std::string& key) {
  const DatabaseUrl parsed = DatabaseUrl::parse(url);
  auto conn = open_connection(parsed);
  const bool pg = parsed.dialect == Dialect::kPostgreSQL;
  if (on_galera(url)) conn->execute("SET SESSION wsrep_sync_wait = 1");
  Result r = conn->execute("SELECT fencing_token, hold_count FROM " +
                               tables.qualified(parsed.dialect, "locks") +
                               " WHERE lock_key = " + (pg ? "$1" : "?"),
                           {Value(key)});
  if (r.empty()) return {};
  return {r.int64_at(0, "fencing_token"), r.int64_at(0, "hold_count")};
}

std::int64_t read_counter(const std::string& url, const TableNames& tables) {
  const DatabaseUrl parsed = DatabaseUrl::parse(url);
  auto conn = open_connection(parsed);
  if (on_galera(url)) conn->execute("SET SESSION wsrep_sync_wait = 1");
  return conn
      ->execute("SELECT token FROM " + tables.qualified(parsed.dialect, "resource") +
                " WHERE id = 1")
      .int64_at(0, "token");
}

}  // namespace dblock::testing
