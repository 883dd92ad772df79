// SPDX-License-Identifier: Apache-2.0
// The reader-writer lock (ReadWriteLock), against every database x driver pair, from the side of
// its guarantees: readers share a key, a writer excludes readers and other writers, however many
// threads of each kind ask at once; a waiting writer gets the key while readers keep coming; a
// writer that gives up or dies lets readers in again; writers' tokens rise.
#include "dblock/read_write_lock.hpp"

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "dblock/semaphore.hpp"
#include "migrated_fixture.hpp"

namespace dblock::testing {
namespace {

class ReadWriteLockTest : public MigratedPoolTest {
 protected:
  ReadWriteLockTest() : MigratedPoolTest("rw", 16) {}
  std::unique_ptr<ReadWriteLock> make(int max_readers = 100) {
    return std::make_unique<ReadWriteLock>(
        *pool_, ReadWriteLockOptions{.tables = tables_, .max_readers = max_readers});
  }
};

TEST_P(ReadWriteLockTest, ReadersShareTheKeyAndAWriterExcludesThem) {
  auto rw = make();
  std::vector<Lease> readers;
  for (int i = 0; i < 3; ++i) {
    auto r = rw->reader().try_acquire("k", as("r" + std::to_string(i)));
    ASSERT_TRUE(r) << "reader " << i;
    readers.push_back(std::move(*r));
  }
  EXPECT_FALSE(rw->writer().try_acquire("k", as("w"))) << "a writer in with three readers";
  EXPECT_FALSE(rw->writer().acquire("k", milliseconds(200), as("w")));
  // The writer that gave up left no place behind: readers still get in.
  auto fourth = rw->reader().try_acquire("k", as("r3"));
  EXPECT_TRUE(fourth) << "a writer that gave up kept readers out";
  fourth.reset();
  for (auto& r : readers) EXPECT_EQ(r.release(), ReleaseOutcome::kReleased);
  auto w = rw->writer().try_acquire("k", as("w"));
  ASSERT_TRUE(w);
  EXPECT_FALSE(rw->reader().try_acquire("k", as("r0"))) << "a reader in with the writer";
  EXPECT_FALSE(rw->writer().try_acquire("k", as("w2"))) << "a second writer in";
  EXPECT_EQ(w->release(), ReleaseOutcome::kReleased);
  EXPECT_TRUE(rw->reader().try_acquire("k", as("r0")));
  // Another key is apart.
  auto other = rw->writer().try_acquire("other", as("w"));
  EXPECT_TRUE(other);
}

TEST_P(ReadWriteLockTest, NeverAWriterWithAReaderOrAnotherWriter) {
  // 6 reader threads and 3 writer threads, each with a lock object of its own, for 2.5 s.
  std::atomic<int> readers{0}, writers{0}, max_readers{0}, read_grants{0}, write_grants{0},
      errors{0}, overlaps{0};
  std::vector<std::thread> threads;
  const auto until = Clock::now() + milliseconds(2500);
  for (int t = 0; t < 9; ++t) {
    threads.emplace_back([&, t] {
      auto rw = make();
      const bool writer = t < 3;
      for (int i = 0; Clock::now() < until; ++i) {
        try {
          const LockOptions o = as("t" + std::to_string(t));
          Lock& lock = writer ? rw->writer() : rw->reader();
          auto lease =
              i % 2 == 0 ? lock.try_acquire("k", o) : lock.acquire("k", milliseconds(300), o);
          if (!lease) continue;
          if (writer) {
            ++write_grants;
            if (++writers > 1 || readers.load() > 0) ++overlaps;
          } else {
            ++read_grants;
            const int now = ++readers;
            if (writers.load() > 0) ++overlaps;
            int seen = max_readers.load();
            while (now > seen && !max_readers.compare_exchange_weak(seen, now)) {
            }
          }
          std::this_thread::sleep_for(milliseconds(writer ? 2 : 5));
          --(writer ? writers : readers);  // before the release: held until the server frees it
          EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
          if (writer) std::this_thread::sleep_for(milliseconds(10));
        } catch (const std::exception& e) {
          ++errors;
          ADD_FAILURE() << e.what();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::printf("[ rw lock  ] %s: %d reads (up to %d at once), %d writes\n", backend().name.c_str(),
              read_grants.load(), max_readers.load(), write_grants.load());
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(overlaps.load(), 0) << "a writer held the key with a reader or another writer";
  EXPECT_GT(write_grants.load(), 0) << "the writers never got in";
  EXPECT_GT(read_grants.load(), 0);
  EXPECT_GT(max_readers.load(), 1) << "readers never shared the key";
}

TEST_P(ReadWriteLockTest, AWaitingWriterGetsInWhileReadersKeepComing) {
  // Four readers take turns so that one always holds the key; a writer that asks must still get
  // in, once those already in are done: no reader starts while it waits.
  std::atomic<bool> stop{false};
  std::atomic<int> started_after_ask{0};
  constexpr Clock::rep kNever = -1;
  std::atomic<Clock::rep> asked{kNever};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      auto rw = make();
      std::this_thread::sleep_for(milliseconds(15 * t));
      while (!stop) {
        auto lease = rw->reader().acquire("k", milliseconds(100), as("r" + std::to_string(t)));
        if (!lease) continue;
        const Clock::rep ask = asked.load();
        if (ask != kNever &&
            Clock::now() > Clock::time_point(Clock::duration(ask)) + milliseconds(200)) {
          ++started_after_ask;  // well after the writer asked: it had taken its place by then
        }
        std::this_thread::sleep_for(milliseconds(60));
        lease->release();
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  auto rw = make();
  const auto start = Clock::now();
  asked = start.time_since_epoch().count();
  auto w = rw->writer().acquire("k", milliseconds(5000), as("w"));
  const auto waited = Clock::now() - start;
  stop = true;
  for (auto& t : readers) t.join();
  ASSERT_TRUE(w) << "the writer was starved";
  EXPECT_LT(waited, milliseconds(1500));
  EXPECT_EQ(started_after_ask.load(), 0) << "readers got in while the writer waited";
  std::printf("[ rw lock  ] %s: the writer got in after %lld ms\n", backend().name.c_str(),
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(waited).count()));
}

TEST_P(ReadWriteLockTest, ADeadWritersPlaceEndsWithItsTtl) {
  auto rw = make();
  auto dead = rw->writer().try_acquire("k", as("dead", milliseconds(600), false));
  ASSERT_TRUE(dead);
  const auto start = Clock::now();
  auto r = rw->reader().acquire("k", milliseconds(5000), as("r"));
  ASSERT_TRUE(r);
  EXPECT_GE(Clock::now() - start, milliseconds(450)) << "a reader got in before the TTL";
  EXPECT_TRUE(dead->lost());
  EXPECT_EQ(dead->release(), ReleaseOutcome::kNotHeld);
}

TEST_P(ReadWriteLockTest, WritersTokensRise) {
  auto rw = make();
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto w = rw->writer().try_acquire("k", as("w" + std::to_string(i)));
    ASSERT_TRUE(w);
    EXPECT_GT(w->fencing_token(), last);
    EXPECT_EQ(w->fencing_token() % 1024, 0) << "the writer's slot is 0";
    last = w->fencing_token();
    auto r = rw->reader().try_acquire("k", as("r"));  // a reader between writers
    ASSERT_FALSE(r);
  }
}

TEST_P(ReadWriteLockTest, AnotherMaxReadersOrOneOutOfRangeIsRefused) {
  auto hundred = make(100);
  ASSERT_TRUE(hundred->reader().try_acquire("k", as("r")));
  try {
    make(5)->reader().try_acquire("k", as("r"));
    FAIL() << "a lock with 5 readers took a key stored with 100";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("stored with 100 readers, and this ReadWriteLock has 5"),
              std::string::npos)
        << e.what();
  }
  for (int n : {0, Semaphore::kMaxPermits}) {
    try {
      make(n);
      FAIL() << "max_readers " << n << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("max_readers from 1 to 999"), std::string::npos)
          << e.what();
    }
  }
}

// Issue: a ReadWriteLock on a key a Semaphore(1) uses said "stored with 0 readers".
TEST_P(ReadWriteLockTest, OnASemaphoresKeyItSaysWhoseKeyItIs) {
  SemaphoreOptions so;
  so.tables = tables_;
  Semaphore one(*pool_, 1, so);
  ASSERT_TRUE(one.try_acquire("shared-key", as("s")));  // stores the limit 1
  try {
    make()->reader().try_acquire("shared-key", as("r"));
    ADD_FAILURE() << "a reader was let onto a semaphore's key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    const std::string said = e.what();
    EXPECT_NE(said.find("used by a Semaphore of 1 permit"), std::string::npos) << said;
    EXPECT_EQ(said.find("0 readers"), std::string::npos) << said;
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, ReadWriteLockTest, ::testing::ValuesIn(all_backends()),
                         BackendName());

}  // namespace
}  // namespace dblock::testing
