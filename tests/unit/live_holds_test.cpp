// SPDX-License-Identifier: Apache-2.0
// The unique-key lock's registry of this process's live leases, without a database: a hold
// counted is found, a released one is gone, ids (which carry the fencing token) are kept apart,
// and a forked child starts with a registry of its own.
#include "unique_key/live_holds.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "fork_child.hpp"

namespace dblock::detail {
namespace {

// Adds (+1) or removes (-1) a lease of `id`, then expects `count` leases of `id`.
struct Step {
  int op;
  const char* id;
  int count;
};
void play(LiveHolds& holds, std::initializer_list<Step> steps) {
  for (const Step& s : steps) {
    if (s.op > 0) {
      holds.add(s.id);
    } else {
      holds.remove(s.id);
    }
    EXPECT_EQ(holds.count(s.id), s.count)
        << (s.op > 0 ? "after adding " : "after removing ") << s.id;
  }
}

TEST(LiveHolds, AHoldAddedIsCountedAndAReleasedOneIsGone) {
  LiveHolds holds;
  EXPECT_EQ(holds.count("k\nowner\n7"), 0);
  // A second lease of the same owner and tenure counts twice.
  play(holds, {{+1, "k\nowner\n7", 1},
               {+1, "k\nowner\n7", 2},
               {-1, "k\nowner\n7", 1},
               {-1, "k\nowner\n7", 0}});
}

TEST(LiveHolds, RemovingWhatIsNotHeldChangesNothing) {
  LiveHolds holds;
  play(holds, {{-1, "k\nowner\n7", 0},
               {+1, "k\nowner\n7", 1},
               {-1, "k\nowner\n7", 0},
               {-1, "k\nowner\n7", 0},  // never below none
               {+1, "k\nowner\n7", 1}});
}

// The token tells a key's tenures apart: a lease of an earlier tenure accounts for none of the
// current one's holds.
TEST(LiveHolds, IdsOfAnotherTenureOrOwnerAreCountedApart) {
  LiveHolds holds;
  holds.add("k\nowner\n7");
  EXPECT_EQ(holds.count("k\nowner\n8"), 0);
  EXPECT_EQ(holds.count("k\nother\n7"), 0);
  holds.add("k\nowner\n8");
  holds.remove("k\nowner\n7");
  EXPECT_EQ(holds.count("k\nowner\n7"), 0);
  EXPECT_EQ(holds.count("k\nowner\n8"), 1);
}

TEST(LiveHolds, ThreadsAddingAndRemovingAtOnceLoseNoCount) {
  LiveHolds holds;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        holds.add("shared");
        holds.add("kept");
        holds.remove("shared");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(holds.count("shared"), 0);
  EXPECT_EQ(holds.count("kept"), 4000);
}

TEST(LiveHolds, TheProcessHasOneRegistry) {
  const std::string id = "LiveHolds.TheProcessHasOneRegistry";
  LiveHolds::instance().add(id);
  int seen = 0;
  std::thread([&] { seen = LiveHolds::instance().count(id); }).join();
  EXPECT_EQ(seen, 1);
  LiveHolds::instance().remove(id);
  EXPECT_EQ(LiveHolds::instance().count(id), 0);
}

// A forked child's leases are its own: it sees none of its parent's holds, and what it counts
// stays in the child.
TEST(LiveHolds, AForkedChildStartsWithNone) {
  const std::string id = "LiveHolds.AForkedChildStartsWithNone";
  LiveHolds::instance().add(id);
  const ChildAnswer child = ask_a_child([&] {
    const int inherited = LiveHolds::instance().count(id);
    LiveHolds::instance().add(id + "/child");
    return std::to_string(inherited) + " " +
           std::to_string(LiveHolds::instance().count(id + "/child"));
  });
  EXPECT_EQ(child.text, "0 1");
  EXPECT_EQ(LiveHolds::instance().count(id), 1);
  EXPECT_EQ(LiveHolds::instance().count(id + "/child"), 0);
  LiveHolds::instance().remove(id);
}

}  // namespace
}  // namespace dblock::detail
