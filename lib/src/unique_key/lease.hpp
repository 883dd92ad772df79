// SPDX-License-Identifier: Apache-2.0
// A unique-key lease: made once a key is granted (by an acquire of its own, or by a holder's
// hand-over), counted among this process's live holds while held, released through its lock
// object's release path and renewed by its renew statement. Internal.
//
//   return held(impl, info, options, {token, sent}, false);  // an acquire got `token`
//
// Thread-safety: held() may be called from many threads at once; the lease it returns follows
// LeaseCore's rules (lease_core.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "dblock/lock.hpp"
#include "lease_core.hpp"
#include "unique_key/lock_impl.hpp"
#include "unique_key/release_listener.hpp"

namespace dblock::detail {

// The lease of `info` (key, lease id, owner), granted `grant.fencing_token` by a statement sent at
// `grant.sent`: an acquire of its own, or a holder's hand-over (`handed_over`).
Lease held(const std::shared_ptr<detail::UniqueKeyLockCore>& impl, LeaseInfo info,
           const LockOptions& options, ReleaseListener::Grant grant, bool handed_over);

// Releases `lease`, a unique-key lease, by handing its key to a candidate another process
// registered for it (Candidacy): `candidate`, an owner_thread, or the earliest registered when
// empty (UniqueKeyLockCore::hand_off). Where none is registered live, or the lease is not the
// owner's only hold, the plain release. What the hand-off gave when it took place. Throws as
// Lease::release; a hand-off whose fate a lost connection left unknown throws too (the key is
// then the candidate's, or this lease's until its TTL).
std::optional<HandedOff> release_handing_off(Lease& lease, const std::string& candidate);

}  // namespace dblock::detail
