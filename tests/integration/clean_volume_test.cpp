// SPDX-License-Identifier: Apache-2.0
// The cleaner at volume, on every pair: many expired rows plus live ones; one run must delete
// exactly the expired rows. Prints rows/second and the latency an acquirer saw meanwhile. Not
// part of the default suite (it takes tens of seconds): build target dblock_clean_volume_tests,
// configure with -DDBLOCK_VOLUME_TESTS=ON to run it from ctest (label "volume").
//
// DBLOCK_VOLUME_EXPIRED (default 200000), DBLOCK_VOLUME_LIVE (10000) and DBLOCK_VOLUME_BATCH
// (1000) set the sizes.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/unique_key_lock.hpp"
#include "lock_rows.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

std::uint64_t env_count(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

using CleanVolumeTest = MigratedTablesTest;

TEST_P(CleanVolumeTest, OneRunDeletesExactlyTheExpiredRows) {
  const std::uint64_t expired = env_count("DBLOCK_VOLUME_EXPIRED", 200000);
  const std::uint64_t live = env_count("DBLOCK_VOLUME_LIVE", 10000);
  CleanOptions options;
  options.grace = 1min;  // keeps the acquirer's freed row, so the count is exact
  options.batch_size = env_count("DBLOCK_VOLUME_BATCH", 1000);

  const auto load_start = Clock::now();
  insert_lock_rows(*conn_, tables_, "old", expired, -3600);
  insert_lock_rows(*conn_, tables_, "live", live, 3600);
  const double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();

  // An acquirer takes and releases its own key throughout the run.
  auto pool = open_pool(backend().url(), {.max_size = 2});
  UniqueKeyLock locks(*pool, {.tables = tables_});
  ASSERT_TRUE(locks.try_acquire("acquirer"));  // warm up: connections opened, statements prepared
  std::atomic<bool> done{false};
  std::vector<double> latencies_ms;
  std::uint64_t not_acquired = 0;
  std::thread acquirer([&] {
    while (!done.load()) {
      const auto t0 = Clock::now();
      auto lease = locks.try_acquire("acquirer");
      latencies_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (lease) {
        lease->release();
      } else {
        ++not_acquired;
      }
      std::this_thread::sleep_for(2ms);
    }
  });

  CleanResult r = clean(*conn_, tables_, options);
  done.store(true);
  acquirer.join();

  EXPECT_EQ(r.deleted, expired);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(count_lock_rows(*conn_, tables_, "old"), 0u);
  EXPECT_EQ(count_lock_rows(*conn_, tables_, "live"), live);
  EXPECT_EQ(not_acquired, 0u);

  const double seconds = std::chrono::duration<double>(r.duration).count();
  std::printf(
      "[ volume   ] %s: loaded %llu expired + %llu live rows in %.1f s; cleaned %llu rows in "
      "%llu batches of %llu in %.2f s = %.0f rows/s; acquirer meanwhile: %zu tries, p50 %.2f ms, "
      "p99 %.2f ms, max %.2f ms\n",
      backend().name.c_str(), static_cast<unsigned long long>(expired),
      static_cast<unsigned long long>(live), load_s, static_cast<unsigned long long>(r.deleted),
      static_cast<unsigned long long>(r.batches),
      static_cast<unsigned long long>(options.batch_size), seconds,
      seconds > 0 ? static_cast<double>(r.deleted) / seconds : 0.0, latencies_ms.size(),
      percentile(latencies_ms, 0.50), percentile(latencies_ms, 0.99),
      percentile(latencies_ms, 1.0));
}

INSTANTIATE_TEST_SUITE_P(Pairs, CleanVolumeTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
