// SPDX-License-Identifier: Apache-2.0
// The holder of scenario 6, whose network is cut while it holds a key. "cut-off" takes "k"
// through a CutOffLock (cut_off_lock.hpp) and renews its lease itself every third of its TTL;
// "taker" stands ready to take the key through a lock on the direct pool; both write one history.
// blackhole() lets a renewal or two through, then holds every packet of the holder's
// connections; heal() closes them, so the holder's hung renewal fails and the server ends its
// session.
//
//   auto cut = cut_off_holder(milliseconds(1500));  // FaultTest
//   ASSERT_TRUE(cut.holder.acquire(milliseconds(0)));
//   cut.blackhole();
//   EXPECT_FALSE(cut.taker.acquire(milliseconds(3000)));  // without a TTL the lock stays held
//   cut.heal();
//
// Thread-safety: as RecordedHolder and CutOffLock.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "cut_off_lock.hpp"
#include "dblock/lock.hpp"
#include "history.hpp"
#include "recorded_holder.hpp"

namespace dblock::testing {

struct CutOffHolder {
  // The holder's lock goes to the server `url` names through a proxy; the taker's is
  // `direct_lock`. Both write to the history file `history_path`.
  CutOffHolder(const DatabaseUrl& url, const StrategyUnderTest& strategy, const TableNames& tables,
               std::unique_ptr<Lock> direct_lock, const std::string& history_path,
               std::chrono::milliseconds ttl);

  // Waits half the holder's TTL (a renewal or two get through), then blackholes its network.
  void blackhole();
  // Ends the blackhole and closes the holder's connections.
  void heal() { network.heal(); }

  CutOffLock network;            // the holder's
  std::unique_ptr<Lock> direct;  // the taker's
  HistoryWriter history;
  RecordedHolder holder;  // "cut-off" on "k", with the TTL given
  RecordedHolder taker;   // "taker" on "k", with a TTL of 30 s

 private:
  std::chrono::milliseconds ttl_;
};

}  // namespace dblock::testing
