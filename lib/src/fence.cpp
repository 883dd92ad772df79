// SPDX-License-Identifier: Apache-2.0
// fence(): purpose and thread-safety in dblock/fence.hpp. The checks every lease kind shares are
// here; the statement is each kind's (LeaseCore::fence).
#include "dblock/fence.hpp"

#include <string>

#include "dblock/error.hpp"
#include "lease_access.hpp"
#include "ttl_lease.hpp"

namespace dblock {

namespace detail {

void LeaseCore::fence(Connection& conn) {
  if (connection() == nullptr) {
    throw Error(ErrorCode::kFailedPrecondition,
                "this kind of lease cannot fence a transaction; see docs/locks/fencing.md");
  }
  if (connection() != &conn) {
    throw Error(ErrorCode::kInvalidArgument,
                "the lease on '" + info().key +
                    "' holds its key in a transaction of its own: write through its connection "
                    "(Lease::connection()), whose commit is the lock's, instead of fencing "
                    "another");
  }
}

}  // namespace detail

void fence(const Lease& lease, Connection& conn) {
  detail::LeaseCore* core = detail::LeaseAccess::core(lease);
  if (core == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "fence() needs a held lease; this one was released or moved from");
  }
  if (!conn.in_transaction()) {
    throw Error(ErrorCode::kFailedPrecondition,
                "fence() needs an open transaction on the connection: call begin() first (a "
                "fence in autocommit ends with its own statement and protects nothing)");
  }
  // Known lost here already (or a forked child's copy of its parent's lease): nothing to ask.
  if (lease.lost()) throw detail::fence_lease_lost(lease.key());
  core->fence(conn);
}

void fence(const LeaseSet& set, Connection& conn) {
  for (const Lease& lease : set.leases()) fence(lease, conn);
}

}  // namespace dblock
