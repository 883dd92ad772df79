// SPDX-License-Identifier: Apache-2.0
// fork() from the side of the guarantees, against every database x driver pair: children of a
// process that has taken locks draw ids of their own (two children never hold one permit as
// twins), a child never gives back, renews or ends its parent's holds (not by a lease's
// destructor, not by closing the connections it inherited), its copies of the parent's leases
// report lost(), it exits without waiting on the parent's threads, and it can take locks through
// the pool and lock objects it inherited, on connections of its own.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>

#include "backends.hpp"
#include "dblock/async_lock.hpp"
#include "dblock/open.hpp"
#include "dblock/read_write_lock.hpp"
#include "dblock/row_lock.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/session_lock.hpp"
#include "dblock/unique_key_lock.hpp"
#include "migrated_fixture.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DBLOCK_FORK_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DBLOCK_FORK_TEST_ASAN 1
#endif
#endif

namespace dblock::testing {
namespace {
bool forked_child = false;  // set in the children of in_child()
}  // namespace
}  // namespace dblock::testing

#ifdef DBLOCK_FORK_TEST_ASAN
// The children of in_child() skip LeakSanitizer's check at exit. The allocator of GCC 12's
// sanitizer runtime has no fork handler: a child forked while one of the parent's other threads
// (a renewer, a listener) held one of its locks waits on it forever, inside the sanitizer, not
// in dblock; the check at exit takes every one of those locks. The test process itself is still
// checked. (A malloc or free in the child can meet the same lock, so .ci/run leaves these tests
// to the normal build.)
extern "C" int __lsan_is_turned_off() { return dblock::testing::forked_child ? 1 : 0; }
#endif

namespace dblock::testing {
namespace {

using std::chrono::seconds;

// What a child of fork() reported: its exit status, and what it wrote to its pipe.
struct ChildResult {
  int status = -1;  // the child's exit code; -1 when it had to be killed (it hung)
  std::string said;
};

// Runs `body` in a child of fork(), which leaves through std::exit() with body's result (as a
// child returning from main does: atexit handlers and static destructors run). `say` writes to
// the parent. A child still running after `limit` is killed and reported as hung (-1).
ChildResult in_child(const std::function<int(const std::function<void(const std::string&)>&)>& body,
                     seconds limit = seconds(30)) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  std::fflush(nullptr);  // no buffered output written twice
  const pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    forked_child = true;
    ::close(fds[0]);
    const auto say = [&](const std::string& text) {
      std::string line = text + "\n";
      (void)!::write(fds[1], line.data(), line.size());
    };
    int code = 90;
    try {
      code = body(say);
    } catch (const std::exception& e) {
      say(std::string("exception: ") + e.what());
      code = 91;
    }
    ::close(fds[1]);
    std::exit(code);
  }
  ::close(fds[1]);
  ChildResult out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(fds[0]);
      return out;  // status -1: hung
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  char buf[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    out.said.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

class ForkTest : public MigratedPoolTest {
 protected:
  ForkTest() : MigratedPoolTest("fk", 8) {}

  template <class L, class O>
  std::unique_ptr<L> make(ConnectionSource& source, O options) {
    options.tables = tables_;
    if constexpr (std::is_same_v<L, Semaphore>) {
      return std::make_unique<L>(source, 1, options);
    } else {
      return std::make_unique<L>(source, options);
    }
  }
  // Not renewed unless asked: a child leaves its leases to their TTL.
  static LockOptions as(const std::string& owner, bool auto_renew = false,
                        milliseconds ttl = seconds(30)) {
    return MigratedPoolTest::as(owner, ttl, auto_renew);
  }
};

// Issue: children forked by a process that had taken (and given back) locks drew the same lease
// ids, and both held the one permit of a Semaphore(1), or the one write lease, at once. Each
// child here takes the lock on a pool of its own and leaves without releasing it; the second
// must be refused while the first child's lease lives, and the ids must differ.
TEST_P(ForkTest, ChildrenOfAHolderDrawIdsOfTheirOwn) {
  {
    // The parent uses every id source first, as a long-running service has.
    auto sem = make<Semaphore>(*pool_, SemaphoreOptions{});
    auto lease = sem->try_acquire("warm-up", as("parent"));
    ASSERT_TRUE(lease);
    auto uk = make<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{});
    auto held = uk->try_acquire("warm-up", as("parent"));
    ASSERT_TRUE(held);
  }
  const auto child = [&](const std::string& what) {
    return in_child([&](const auto& say) {
      auto pool = open_pool(backend().url(), {.max_size = 2});
      std::optional<Lease> lease;
      if (what == "permit") {
        SemaphoreOptions o;
        o.tables = tables_;
        Semaphore sem(*pool, 1, o);
        lease = sem.try_acquire("one-permit", as("child"));
      } else {
        ReadWriteLockOptions o;
        o.tables = tables_;
        ReadWriteLock rw(*pool, o);
        lease = rw.writer().try_acquire("one-writer", as("child"));
      }
      say(lease ? "held " + lease->lease_id() : "refused");
      std::_Exit(0);  // leaves the lease in place: its TTL (30 s) keeps it
      return 0;
    });
  };
  for (const std::string what : {"permit", "write lease"}) {
    SCOPED_TRACE(what);
    const ChildResult first = child(what);
    const ChildResult second = child(what);
    ASSERT_EQ(first.status, 0) << first.said;
    ASSERT_EQ(second.status, 0) << second.said;
    EXPECT_EQ(first.said.rfind("held ", 0), 0u) << first.said;
    EXPECT_EQ(second.said, "refused\n") << "two forked children held one " << what
                                        << " at once: " << first.said << " / " << second.said;
  }
}

// Issue: a child forked while its parent held a lease, leaving through the parent's scope
// (destructors run), freed the parent's hold; a third process got the key while the parent's
// lost() stayed false. Here the child ends its copies of the leases, lock objects and pool and
// exits; nobody else may take any of the keys, the parent's leases still hold, and the child saw
// its copies as lost.
TEST_P(ForkTest, AChildLeavingThroughItsParentsScopeLeavesTheParentsHolds) {
  auto uk = make<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{});
  auto sem = make<Semaphore>(*pool_, SemaphoreOptions{});
  auto session = make<SessionLock>(*pool_, SessionLockOptions{});
  auto rows = make<RowLock>(*pool_, RowLockOptions{});
  std::optional<Lease> unique = uk->try_acquire("uk", as("parent", true));
  std::optional<Lease> permit = sem->try_acquire("sem", as("parent", true));
  std::optional<Lease> native = session->try_acquire("ses", as("parent"));
  std::optional<Lease> row = rows->try_acquire("row", as("parent"));
  ASSERT_TRUE(unique && permit && native && row);

  const ChildResult r = in_child([&](const auto& say) {
    int wrong = 0;
    for (auto* lease : {&unique, &permit, &native, &row}) {
      if (!(*lease)->lost()) say("a copy reports held: " + (*lease)->key()), ++wrong;
    }
    // An explicit release in the child sends nothing and says the hold is not the child's.
    if (unique->release() != ReleaseOutcome::kNotHeld)
      say("release of the copy did something"), ++wrong;
    permit.reset();
    native.reset();
    row.reset();
    uk.reset();
    sem.reset();
    session.reset();
    rows.reset();
    pool_.reset();  // closes the inherited connections
    return wrong;
  });
  ASSERT_EQ(r.status, 0) << (r.status == -1 ? "the child hung at exit" : r.said);

  auto other_pool = open_pool(backend().url(), {.max_size = 4});
  auto other_uk = make<UniqueKeyLock>(*other_pool, UniqueKeyLockOptions{});
  auto other_sem = make<Semaphore>(*other_pool, SemaphoreOptions{});
  auto other_session = make<SessionLock>(*other_pool, SessionLockOptions{});
  auto other_rows = make<RowLock>(*other_pool, RowLockOptions{});
  EXPECT_FALSE(other_uk->try_acquire("uk", as("third"))) << "the child freed the parent's lease";
  EXPECT_FALSE(other_sem->try_acquire("sem", as("third"))) << "the child freed the parent's permit";
  EXPECT_FALSE(other_session->try_acquire("ses", as("third")))
      << "the child ended the parent's session lock";
  EXPECT_FALSE(other_rows->try_acquire("row", as("third")))
      << "the child ended the parent's row lock";
  for (auto* lease : {&unique, &permit, &native, &row}) {
    EXPECT_FALSE((*lease)->lost()) << (*lease)->key();
    EXPECT_EQ((*lease)->release(), ReleaseOutcome::kReleased) << (*lease)->key();
  }
}

// Issue: a child returning from main hung in the renewer's destructor. The parent's renewer is
// busy here (a 300 ms TTL is renewed every 100 ms); the child exits through std::exit.
TEST_P(ForkTest, AChildExitsWhileItsParentsRenewerRuns) {
  auto uk = make<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{});
  auto lease = uk->try_acquire("renewed", as("parent", true, milliseconds(300)));
  ASSERT_TRUE(lease);
  for (int i = 0; i < 5; ++i) {
    const ChildResult r = in_child([](const auto&) { return 0; }, seconds(15));
    ASSERT_EQ(r.status, 0) << "the child hung at exit";
    std::this_thread::sleep_for(milliseconds(37));  // another point of the renewer's cycle
  }
  EXPECT_FALSE(lease->lost());
  EXPECT_EQ(lease->release(), ReleaseOutcome::kReleased);
}

// A child of a process whose Semaphore listens for releases (its listener's thread runs in the
// parent only) waits through the inherited Semaphore by polling, takes a free permit, and exits,
// destroying it, without hanging; the parent's waiter is still woken by a release.
TEST_P(ForkTest, AChildWaitsThroughItsParentsListeningSemaphoreByPolling) {
  SemaphoreOptions options;
  options.backoff = {milliseconds(20), milliseconds(20), milliseconds(20)};
  options.notify = true;
  auto sem = make<Semaphore>(*pool_, options);
  auto held = sem->try_acquire("held", as("parent"));
  ASSERT_TRUE(held);
  EXPECT_FALSE(sem->acquire("held", milliseconds(100), as("parent-2")));  // starts the listener
  const ChildResult r = in_child([&](const auto& say) {
    int wrong = 0;
    if (sem->acquire("held", milliseconds(200), as("child"))) {
      say("the child got the parent's permit"), ++wrong;
    }
    auto free = sem->acquire("free", milliseconds(2000), as("child"));
    if (!free) say("the child did not get a free permit"), ++wrong;
    if (free && free->release() != ReleaseOutcome::kReleased) say("release failed"), ++wrong;
    sem.reset();
    pool_.reset();
    return wrong;
  });
  ASSERT_EQ(r.status, 0) << (r.status == -1 ? "the child hung" : r.said);
  std::optional<Lease> got;
  std::thread waiter([&] { got = sem->acquire("held", seconds(10), as("parent-3")); });
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  waiter.join();
  EXPECT_TRUE(got) << "the parent's waiter did not get the permit after the child's exit";
}

// A child of a process with an AsyncLock waiting for a key: the inherited AsyncLock refuses a new
// acquire (its threads run in the parent only), a new one made in the child works, and the child
// exits, destroying both, without hanging; the parent's pending acquire still gets the key.
TEST_P(ForkTest, AChildMakesAnAsyncLockOfItsOwn) {
  auto uk = make<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{});
  auto held = uk->try_acquire("held", as("holder"));
  ASSERT_TRUE(held);
  auto async = std::make_unique<AsyncLock>(*uk);
  auto pending = async->acquire("held", seconds(20), as("parent"));
  const ChildResult r = in_child([&](const auto& say) {
    int wrong = 0;
    try {
      (void)async->acquire("free", seconds(1), as("child"));
      say("the inherited AsyncLock started an acquire"), ++wrong;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kFailedPrecondition) say(e.what()), ++wrong;
    }
    AsyncLock own(*uk);
    auto lease = own.acquire("free", seconds(5), as("child")).get();
    if (!lease) say("the child's own AsyncLock got nothing"), ++wrong;
    if (lease && lease->release() != ReleaseOutcome::kReleased) say("release failed"), ++wrong;
    async.reset();
    return wrong;
  });
  ASSERT_EQ(r.status, 0) << (r.status == -1 ? "the child hung" : r.said);
  EXPECT_EQ(held->release(), ReleaseOutcome::kReleased);
  std::optional<Lease> got = pending.get();
  ASSERT_TRUE(got) << "the parent's pending acquire did not get the key";
  EXPECT_EQ(got->release(), ReleaseOutcome::kReleased);
}

// A child may go on using the pool and lock objects it inherited: they open connections of its
// own (the parent's sockets are never written to), its leases are its own, and its renewer runs.
TEST_P(ForkTest, AChildUsesItsInheritedPoolOnConnectionsOfItsOwn) {
  auto uk = make<UniqueKeyLock>(*pool_, UniqueKeyLockOptions{});
  {
    auto warm = uk->try_acquire("warm", as("parent", true));  // the pool keeps that connection
    ASSERT_TRUE(warm);
  }
  const ChildResult r = in_child([&](const auto& say) {
    auto lease = uk->acquire("child-key", milliseconds(5000), as("child", true, milliseconds(600)));
    if (!lease) return say("not acquired"), 1;
    std::this_thread::sleep_for(milliseconds(1000));  // outlives its TTL: the renewer must run
    if (lease->lost()) return say("lost"), 2;
    if (lease->release() != ReleaseOutcome::kReleased) return say("release"), 3;
    return 0;
  });
  ASSERT_EQ(r.status, 0) << r.said;
  // The parent's connections were not disturbed: its next statements go through.
  auto again = uk->try_acquire("child-key", as("parent"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->release(), ReleaseOutcome::kReleased);
}

INSTANTIATE_TEST_SUITE_P(Pairs, ForkTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
