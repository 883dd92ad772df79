// SPDX-License-Identifier: Apache-2.0
#include "fault_fixture.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "dblock/migrator.hpp"
#include "dblock/open.hpp"

namespace dblock::testing {

std::vector<FaultCase> fault_cases() {
  std::vector<FaultCase> out;
  for (const auto& strategy : fault_strategies()) {
    for (const auto& backend : all_backends()) {
      if (backend.driver == "soci") continue;  // the drivers have their own suite
      out.push_back(FaultCase{backend, strategy});
    }
  }
  return out;
}

void FaultTest::SetUp() {
  tables_ = TableNames(unique_name("f") + "_");
  pool_ = open_pool(backend().url(), {.max_size = 4});
  conn_ = backend().connect();
  Migrator(*conn_, tables_).up();
  const std::string resource = tables_.qualified(backend().dialect, "resource");
  conn_->execute("CREATE TABLE " + resource +
                 " (id INT PRIMARY KEY, token BIGINT NOT NULL, writer VARCHAR(64) NOT NULL)");
  conn_->execute("INSERT INTO " + resource + " (id, token, writer) VALUES (1, 0, '')");
}

CutOffLock FaultTest::cut_off_lock(PoolOptions pool) const {
  return CutOffLock(backend().url(), pool, strategy(), tables_);
}

CutOffHolder FaultTest::cut_off_holder(std::chrono::milliseconds ttl) {
  return CutOffHolder(backend().url(), strategy(), tables_, make_lock(), new_history("blackhole"),
                      ttl);
}

std::optional<LockRow> FaultTest::row(const std::string& key) {
  for (auto& r : strategy().list_rows(*conn_, tables_)) {
    if (r.key == key) return r;
  }
  return std::nullopt;
}

std::size_t FaultTest::live_rows(const std::string& key) {
  std::size_t n = 0;
  for (const auto& r : strategy().list_rows(*conn_, tables_)) {
    if (r.key == key && !r.expired) ++n;
  }
  return n;
}

void FaultTest::not_applicable(const std::string& why) const {
  std::printf("[ analogue ] %s on %s: %s\n", strategy().name.c_str(), backend().name.c_str(),
              why.c_str());
}

std::int64_t FaultTest::counter() {
  return conn_
      ->execute("SELECT token FROM " + tables_.qualified(backend().dialect, "resource") +
                " WHERE id = 1")
      .int64_at(0, "token");
}

std::string FaultTest::writer() {
  return conn_
      ->execute("SELECT writer FROM " + tables_.qualified(backend().dialect, "resource") +
                " WHERE id = 1")
      .at(0, "writer")
      .value_or("");
}

std::int64_t FaultTest::rows_written_by(const std::string& writer) {
  return conn_
      ->execute("SELECT COUNT(*) AS n FROM " + tables_.qualified(backend().dialect, "resource") +
                    " WHERE writer = " + backend().param(1),
                {Value(writer)})
      .int64_at(0, "n");
}

void FaultTest::TearDown() {
  for (const auto& h : histories_) std::filesystem::remove(h);
  auto c = backend().connect();
  backend().drop_tables_with_prefix(*c, tables_.prefix());
}

std::string FaultTest::worker_url() const {
  std::string url = std::getenv(backend().url_env.c_str());
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "driver=" + backend().driver;
}

OneSessionScene FaultTest::one_session_scene(const std::string& stem) {
  return OneSessionScene{one_session_lock(), make_lock(), HistoryWriter(new_history(stem))};
}

CutOffScene FaultTest::cut_off_scene(const std::string& key) {
  return CutOffScene{cut_off_lock(), make_lock(), HistoryWriter(new_history(key)), key};
}

std::string FaultTest::new_history(const std::string& stem) {
  auto path = std::filesystem::temp_directory_path() / (unique_name("history-" + stem) + ".txt");
  histories_.push_back(path.string());
  return histories_.back();
}

std::vector<std::string> FaultTest::worker_argv(const std::string& mode, const std::string& key,
                                                int ttl_ms, const std::string& history,
                                                const std::string& client,
                                                const std::vector<std::string>& extra) const {
  std::vector<std::string> argv{
      DBLOCK_FAULT_WORKER_PATH, mode,    strategy().name, worker_url(), tables_.prefix(), key,
      std::to_string(ttl_ms),   history, client};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::uint64_t FaultTest::fenced_write(std::int64_t token, const std::string& writer) {
  const std::string p1 = backend().param(1), p2 = backend().param(2), p3 = backend().param(3);
  return conn_
      ->execute("UPDATE " + tables_.qualified(backend().dialect, "resource") +
                    " SET token = " + p1 + ", writer = " + p2 + " WHERE id = 1 AND token < " + p3,
                {Value(token), Value(writer), Value(token)})
      .affected_rows();
}

HistoryReport FaultTest::check_histories() {
  const auto holds = load_holds(histories_, strategy().ends_with_ttl);
  HistoryReport report = strategy().exclusive
                             ? check_mutual_exclusion(holds, strategy().global_tokens)
                             : check_compare_and_set(holds);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::printf("[ history  ] %s.%s: %s\n", info->test_suite_name(), info->name(),
              report.summary().c_str());
  EXPECT_TRUE(report.clean()) << report.summary();
  EXPECT_GT(report.holds, 0u) << "the scenario recorded no hold at all";
  return report;
}

}  // namespace dblock::testing
