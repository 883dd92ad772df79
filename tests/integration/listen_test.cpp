// SPDX-License-Identifier: Apache-2.0
// Connection::listen() on every database x driver pair: the one way a session LISTENs, so that
// every driver delivers what is sent to the channel (libpqxx hands a notification only to a
// receiver registered for its channel, and drops the rest).
#include <chrono>
#include <thread>
#include <vector>

#include "backends.hpp"

namespace dblock::testing {
namespace {

using std::chrono::milliseconds;

class ListenTest : public ::testing::TestWithParam<Backend> {
 protected:
  const Backend& backend() const { return GetParam(); }
  bool postgresql() const { return backend().dialect == Dialect::kPostgreSQL; }

  static void notify(Connection& sender, const std::string& channel, const std::string& payload) {
    sender.execute("SELECT pg_notify($1, $2)", {Value(channel), Value(payload)});
  }

  // Waits until `count` notifications arrived (or 5 s passed), then 100 ms more for any extra.
  static std::vector<Notification> receive(Connection& listener, std::size_t count) {
    using Clock = std::chrono::steady_clock;
    std::vector<Notification> all;
    for (auto deadline = Clock::now() + milliseconds(5000);
         all.size() < count && Clock::now() < deadline;) {
      for (auto& n : listener.wait_for_notifications(milliseconds(500))) all.push_back(n);
    }
    for (auto& n : listener.wait_for_notifications(milliseconds(100))) all.push_back(n);
    return all;
  }
};

TEST_P(ListenTest, AListenedChannelReceivesWhatAnotherSessionNotifies) {
  auto listener = backend().connect();
  const std::string channel = unique_name("listen");
  if (!postgresql()) {
    try {
      listener->listen(channel);
      FAIL() << "listen() on a connection without notifications";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    }
    EXPECT_FALSE(listener->broken());
    return;
  }
  auto sender = backend().connect();
  listener->listen(channel);
  listener->listen(channel);  // twice: harmless, one notification per NOTIFY all the same
  notify(*sender, channel, "one");
  notify(*sender, unique_name("other"), "not listened to");
  auto got = receive(*listener, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].channel, channel);
  EXPECT_EQ(got[0].payload, "one");

  // The name is taken exactly: case kept, no folding.
  const std::string mixed = unique_name("Listen_Mixed_");
  listener->listen(mixed);
  notify(*sender, mixed, "mixed");
  got = receive(*listener, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].channel, mixed);
  EXPECT_EQ(got[0].payload, "mixed");
}

TEST_P(ListenTest, AListenInsideATransactionTakesEffectAtItsCommit) {
  if (!postgresql()) return;  // no notifications: the first test checks the refusal
  auto listener = backend().connect();
  auto sender = backend().connect();
  const std::string channel = unique_name("listen");
  listener->begin();
  listener->listen(channel);
  notify(*sender, channel, "before the commit");
  listener->commit();
  notify(*sender, channel, "after the commit");
  auto got = receive(*listener, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "after the commit");
}

TEST_P(ListenTest, ANameThatIsNotAnIdentifierIsRefusedAndTheConnectionStaysUsable) {
  if (!postgresql()) return;  // no notifications: the first test checks the refusal
  auto listener = backend().connect();
  for (const std::string& bad :
       std::vector<std::string>{"", "two words", "quote\"d", "1st", std::string(64, 'x')}) {
    try {
      listener->listen(bad);
      ADD_FAILURE() << "listen(\"" << bad << "\") was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  EXPECT_FALSE(listener->broken());
  EXPECT_EQ(listener->execute("SELECT 1 AS one").int64_at(0, "one"), 1);
}

TEST_P(ListenTest, ListenOnALostConnectionIsConnectionLost) {
  if (!postgresql()) return;  // no notifications: the first test checks the refusal
  auto listener = backend().connect();
  auto killer = backend().connect();
  backend().kill_session(*killer, backend().session_id(*listener));
  std::this_thread::sleep_for(milliseconds(100));
  for (int attempt = 0; attempt < 2; ++attempt) {  // found lost, then known lost
    try {
      listener->listen(unique_name("listen"));
      FAIL() << "listen() on a killed session succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kConnectionLost) << e.what();
    }
    EXPECT_TRUE(listener->broken());
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, ListenTest, ::testing::ValuesIn(all_backends()), BackendName());

}  // namespace
}  // namespace dblock::testing
