// SPDX-License-Identifier: Apache-2.0
// AnyStop: a stop that follows several tokens. The case that matters is the moment after a
// followed token was stopped on another thread and before that thread has run the relay: work
// that asks for the token then must already see the stop (a term's work woken from a pause
// past its lease's deadline asks while the renewer's watchdog is still relaying it).
#include "any_stop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stop_token>
#include <thread>

namespace dblock::detail {
namespace {

using namespace std::chrono_literals;

TEST(AnyStopTest, AFollowedStopIsSeenThroughTokenWhileItsRelayIsStillOnItsWay) {
  std::stop_source followed, other;
  std::promise<void> looked;
  const std::shared_future<void> done = looked.get_future().share();
  std::atomic<int> entered{0};
  // Held-up callbacks registered before and after the relay: whichever order the library runs
  // callbacks in, the requesting thread is held up in one of them before it reaches the relay.
  auto hold_up = [&] {
    ++entered;
    done.wait_for(10s);
  };
  std::stop_callback before(followed.get_token(), hold_up);
  AnyStop any({other.get_token(), followed.get_token()});
  std::stop_callback after(followed.get_token(), hold_up);
  EXPECT_FALSE(any.token().stop_requested());

  std::thread requester([&] { followed.request_stop(); });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (entered.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(entered.load(), 1) << "the requesting thread never ran the callbacks";
  EXPECT_TRUE(followed.get_token().stop_requested());
  EXPECT_TRUE(any.token().stop_requested()) << "a followed stop was not seen before its relay ran";
  looked.set_value();
  requester.join();
  EXPECT_EQ(entered.load(), 2);
  EXPECT_TRUE(any.token().stop_requested());
  EXPECT_FALSE(other.stop_requested()) << "a stop is relayed to the AnyStop, not to its peers";
}

TEST(AnyStopTest, StopsOnAnyFollowedTokenOrItsOwnRequestAndNotBefore) {
  std::stop_source a, b;
  {
    AnyStop any({a.get_token(), b.get_token()});
    const std::stop_token kept = any.token();
    EXPECT_FALSE(kept.stop_requested());
    b.request_stop();
    EXPECT_TRUE(kept.stop_requested()) << "a token kept from earlier sees the relayed stop";
    EXPECT_FALSE(a.stop_requested());
  }
  AnyStop own({std::stop_source().get_token()});
  EXPECT_FALSE(own.token().stop_requested());
  own.request_stop();
  EXPECT_TRUE(own.token().stop_requested());
}

}  // namespace
}  // namespace dblock::detail
