// SPDX-License-Identifier: Apache-2.0
#include "key_set.hpp"

#include <random>
#include <stdexcept>

#include "lock_sql.hpp"

namespace dblock::bench {

KeySet::KeySet(const std::string& prefix, int threads, int keys_per_thread) {
  const std::string run = random_key(prefix);
  keys_.resize(threads);
  for (int t = 0; t < threads; ++t) {
    for (int k = 0; k < keys_per_thread; ++k) {
      keys_[t].push_back(run + ":" + std::to_string(t) + ":" + std::to_string(k));
    }
  }
}

void KeySet::prepare(Lock& lock) const {
  for (const auto& own : keys_) {
    for (const auto& key : own) {
      auto lease = lock.try_acquire(key);
      if (!lease) throw std::runtime_error("benchmark key " + key + " is held by someone else");
      lease->release();
    }
  }
}

const std::string& KeySet::pick(int thread) const {
  static thread_local std::minstd_rand rng{std::random_device{}()};
  const auto& own = keys_.at(thread);
  return own[rng() % own.size()];
}

}  // namespace dblock::bench
