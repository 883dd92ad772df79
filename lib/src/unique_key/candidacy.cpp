// SPDX-License-Identifier: Apache-2.0
// Candidacy: purpose and thread-safety in candidacy.hpp.
#include "unique_key/candidacy.hpp"

#include <utility>
#include <vector>

#include "metadata.hpp"
#include "random.hpp"
#include "ttl_lease.hpp"
#include "unique_key/lock_impl.hpp"

namespace dblock::detail {

Candidacy::Candidacy(UniqueKeyLock& lock, std::string key, const LockOptions& lease)
    : impl_(lock.impl_), key_(std::move(key)), lease_(lease), waiter_id_("c-" + random_hex(32)) {}

Candidacy::~Candidacy() { withdraw(); }

void Candidacy::offer() {
  const Owner owner = lease_.owner ? *lease_.owner : Owner::current_thread();
  const std::vector<Arg> args = owner_args(
      owner, {{"key", Value(key_)},
              {"waiter_id", Value(waiter_id_)},
              {"place_ttl_ms", Value(static_cast<std::int64_t>(kLasting.count()))},
              {"ttl_ms", Value(static_cast<std::int64_t>(lease_.ttl.count()))},
              {"lock_delay_ms", Value(static_cast<std::int64_t>(lease_.lock_delay.count()))},
              {"metadata", metadata_param(lease_.metadata)}});
  (void)impl_->run(&UniqueKeyLockCore::Statements::offer, args, true);
  // Only now: a place whose offer got no reply ends unrefreshed within kLasting, and withdraw()
  // then sends nothing (a campaign stopped while its database is away returns at once).
  placed_ = true;
}

void Candidacy::withdraw() noexcept {
  if (!placed_) return;
  try {
    const std::vector<Arg> args = {{"waiter_id", Value(waiter_id_)},
                                   {"channel", Value(impl_->channel)}};
    (void)impl_->run(&UniqueKeyLockCore::Statements::leave, args, true);
    placed_ = false;
  } catch (...) {
    // The place ends at kLasting.
  }
}

}  // namespace dblock::detail
