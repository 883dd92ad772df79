// SPDX-License-Identifier: Apache-2.0
// What the ha tests share: the clusters (started once per test program, on first use, and
// stopped when it exits), a fresh table prefix and history directory per test, and reads of a
// lock's final state on one node.
//
// Thread-safety: the fixture is used by the test's thread; the helpers open their own
// connections.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cluster_script.hpp"
#include "dblock/doctor.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

// The Galera cluster (scripts/ha-galera.sh), three nodes.
ClusterScript& galera_cluster();
std::vector<std::string> galera_urls();

class HaTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Prints one "[ figures ] ..." line, the test's numbers for the report.
  static void figures(const std::string& line);

  TableNames tables_;
  std::string history_dir_;
};

// A table prefix no other test uses ("ha<pid>_<n>_").
std::string unique_prefix();

// The row of `key` in dblock's lock table on the node at `url`: fencing token and hold count
// (-1, -1 when there is none). On Galera the read waits for the node to catch up
// (wsrep_sync_wait).
struct LockRow {
  std::int64_t token = -1;
  std::int64_t hold_count = -1;
};
LockRow read_lock_row(const std::string& url, const TableNames& tables, const std::string& key);
// The resource counter (row 1's token) on the node at `url`.
std::int64_t read_counter(const std::string& url, const TableNames& tables);

// The finding `check` of `dblock doctor` (check_deployment) on the node at `url`.
Finding doctor_finding(const std::string& url, const TableNames& tables, const std::string& check);

}  // namespace dblock::testing
