// SPDX-License-Identifier: Apache-2.0
// The unique-key lock's registry of releases whose fate is unknown, without a database: a kept
// release is found under its holds id, oldest first, until it is sent and forgotten; a resend
// that failed again replaces its own entry; a forked child starts with none of its parent's.
#include "unique_key/pending_releases.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fork_child.hpp"

namespace dblock::detail {
namespace {

// A release of key "k" with `token`, sent as `release_id` (the lock that made it is gone).
PendingReleases::Entry kept(const std::string& release_id, std::int64_t token = 7) {
  return {{}, {"k", Owner::named("o"), token, release_id, 0}};
}

std::vector<std::string> release_ids(const std::vector<PendingReleases::Entry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.request.release_id);
  return out;
}

TEST(PendingReleases, AKeptReleaseIsFoundUntilItIsForgotten) {
  PendingReleases pending;
  EXPECT_TRUE(pending.find("id").empty());
  pending.keep("id", kept("r-1"));
  const auto found = pending.find("id");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].request.key, "k");
  EXPECT_EQ(found[0].request.owner, Owner::named("o"));
  EXPECT_EQ(found[0].request.fencing_token, 7);
  EXPECT_TRUE(found[0].lock.expired());
  EXPECT_TRUE(pending.find("other id").empty());
  pending.forget("id", "r-1");
  EXPECT_TRUE(pending.find("id").empty());
}

using Ids = std::vector<std::string>;

// One registry, and the releases it keeps under "id".
class PendingReleasesTest : public ::testing::Test {
 protected:
  // Keeps a release sent as each of `release_ids`, in that order, with fencing token `token`.
  void keep(const Ids& release_ids, std::int64_t token = 7) {
    for (const std::string& r : release_ids) pending.keep("id", kept(r, token));
  }
  Ids kept_ids() { return release_ids(pending.find("id")); }

  PendingReleases pending;
};

// One per tenure of the key: each stays until it is sent, and they come back oldest first.
TEST_F(PendingReleasesTest, SeveralAreKeptOldestFirstAndForgottenOneByOne) {
  keep({"r-1", "r-2", "r-3"});
  EXPECT_EQ(kept_ids(), (Ids{"r-1", "r-2", "r-3"}));
  pending.forget("id", "r-2");
  EXPECT_EQ(kept_ids(), (Ids{"r-1", "r-3"}));
  pending.forget("id", "r-9");    // never kept
  pending.forget("id 2", "r-1");  // kept under another id
  EXPECT_EQ(kept_ids(), (Ids{"r-1", "r-3"}));
  for (const char* r : {"r-1", "r-3"}) pending.forget("id", r);
  EXPECT_TRUE(pending.find("id").empty());
}

// A resend that failed again is kept once, as sent the last time.
TEST_F(PendingReleasesTest, KeepingTheSameReleaseAgainReplacesIt) {
  keep({"r-1", "r-2"});
  keep({"r-1"}, 9);
  EXPECT_EQ(kept_ids(), (Ids{"r-1", "r-2"}));
  EXPECT_EQ(pending.find("id").at(0).request.fencing_token, 9);
  for (const char* r : {"r-1", "r-2"}) pending.forget("id", r);
  EXPECT_TRUE(pending.find("id").empty());
  keep({"r-3"});  // the count of kept releases did not drift
  EXPECT_EQ(kept_ids(), (Ids{"r-3"}));
}

TEST(PendingReleases, AForkedChildStartsWithNone) {
  const std::string id = "PendingReleases.AForkedChildStartsWithNone";
  PendingReleases::instance().keep(id, kept("r-parent"));
  const ChildAnswer child = ask_a_child([&] {
    const auto inherited = PendingReleases::instance().find(id).size();
    PendingReleases::instance().keep(id, kept("r-child"));
    return std::to_string(inherited) + " " +
           std::to_string(PendingReleases::instance().find(id).size());
  });
  EXPECT_EQ(child.text, "0 1");
  EXPECT_EQ(release_ids(PendingReleases::instance().find(id)), (Ids{"r-parent"}));
  PendingReleases::instance().forget(id, "r-parent");
  EXPECT_TRUE(PendingReleases::instance().find(id).empty());
}

}  // namespace
}  // namespace dblock::detail
