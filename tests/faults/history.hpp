// SPDX-License-Identifier: Apache-2.0
// Lock histories and the mutual-exclusion checker over them.
//
// Every client in a fault scenario (a thread of the test or a worker process) appends what it
// did to a history file, one event per line, flushed at once so that a client killed with
// SIGKILL leaves everything up to its death behind:
//
//   acquired <client> <key> <token> <reply_us> <sent_us> <ttl_ms>
//   renewed  <client> <key> <token> <sent_us> <ttl_ms>
//   released <client> <key> <token> <sent_us> <outcome>
//
// Times are CLOCK_MONOTONIC microseconds (std::chrono::steady_clock), one clock for every
// process on the machine and untouched by faketime or wall-clock steps.
//
// A client holds a key from the reply of its acquire until the earlier of (a) sending its
// release and (b) one TTL after sending its latest successful acquire or renew: past (b) the
// database has expired the lease, and a careful client (Lease::lost()) stops using it. The
// checker reports, per key, every pair of holds whose intervals overlap and every acquisition
// whose fencing token is not above the token of the acquisition before it.
//
// Thread-safety: a HistoryWriter may be used from many threads; the rest are plain functions.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace dblock::testing {

// Now, in CLOCK_MONOTONIC microseconds.
std::int64_t monotonic_us();

class HistoryWriter {
 public:
  // Appends to `path` (created when missing).
  explicit HistoryWriter(const std::string& path);

  void acquired(const std::string& client, const std::string& key, std::int64_t token,
                std::int64_t reply_us, std::int64_t sent_us, std::int64_t ttl_ms);
  void renewed(const std::string& client, const std::string& key, std::int64_t token,
               std::int64_t sent_us, std::int64_t ttl_ms);
  // `outcome`: released, decremented, not_held, or error (the reply never came).
  void released(const std::string& client, const std::string& key, std::int64_t token,
                std::int64_t sent_us, const std::string& outcome);

 private:
  void line(const std::string& text);

  std::mutex mu_;
  std::ofstream out_;
};

// One acquisition and how long its client may have relied on it.
struct Hold {
  std::string client;
  std::string key;
  std::int64_t token = 0;
  std::int64_t from_us = 0;     // the acquire's reply
  std::int64_t until_us = 0;    // release sent, or latest acquire/renew sent + TTL
  std::string release_outcome;  // empty when no release was sent
};

// Reads history files into holds. Throws std::runtime_error on a malformed line.
// `leases_expire` false is for leases without a TTL (a transaction or a server session holds
// them): a hold then
// lasts until its release is sent when that release succeeded (released, decremented), and
// otherwise (no release, a release that failed or found nothing) until the last moment the
// client knew it still held the key: its acquire's reply or its latest successful renew sent.
// The TTLs written in the history are ignored then.
std::vector<Hold> load_holds(const std::vector<std::string>& paths, bool leases_expire = true);

struct HistoryReport {
  // False: check_mutual_exclusion's report. True: check_compare_and_set's, whose overlaps are
  // versions committed twice and whose token inversions are commits out of version order.
  bool compare_and_set = false;
  std::size_t holds = 0;
  std::size_t commits = 0;  // compare_and_set only: holds released with outcome "released"
  std::size_t keys = 0;
  std::vector<std::string> overlaps;          // one line per overlapping pair
  std::vector<std::string> token_inversions;  // one line per token not above its predecessor's
  std::vector<std::string> repeated_tokens;   // global tokens only: one line per token reused

  bool clean() const {
    return overlaps.empty() && token_inversions.empty() && repeated_tokens.empty();
  }
  // "holds=N keys=K overlaps=0 token_inversions=0" (compare-and-set: "holds=N keys=K
  // commits=C versions_committed_twice=0 commits_out_of_order=0") and the first few problems.
  std::string summary() const;
};

// `global_tokens`: tokens come from one sequence over every key, so no token may be held under
// two keys (or by two clients) either.
HistoryReport check_mutual_exclusion(const std::vector<Hold>& holds, bool global_tokens = false);

// For optimistic leases (the token is the version read; outcome "released" is a commit): no
// update is lost when no two commits of a key read the same version, and commits in the order
// their releases were sent read ever higher versions.
HistoryReport check_compare_and_set(const std::vector<Hold>& holds);

}  // namespace dblock::testing
