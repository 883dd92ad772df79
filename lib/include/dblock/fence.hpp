// SPDX-License-Identifier: Apache-2.0
/// @file
/// Fenced transactions: a transaction on the lock's own database that commits only while a lease
/// is held. fence() checks, inside the caller's open transaction, that the lease's row still
/// carries its token unexpired on the database clock, and share-locks that row until the
/// transaction ends, so no other owner can take the key over before the commit. A holder that
/// paused past its TTL (a GC pause, swap, SIGSTOP) and was taken over gets kLeaseLost from fence()
/// instead of writing after the next holder; one taken over while its fenced transaction is open
/// cannot be: the takeover waits for the commit.
///
/// @code
///   auto lease = locks.acquire("asset:42", 5s);
///   conn.begin();
///   dblock::fence(*lease, conn);  // throws Error(kLeaseLost) once another owner may hold it
///   conn.execute("UPDATE assets SET owner = $1 WHERE id = 42", params);
///   conn.commit();
/// @endcode
///
/// Thread-safety: as the Connection (one thread at a time); the lease may be renewed by the
/// background renewer meanwhile.
///
/// Explained, with what it costs and when it cannot protect, in docs/locks/fencing.md.
#pragma once

#include "dblock/connection.hpp"
#include "dblock/export.hpp"
#include "dblock/lock.hpp"
#include "dblock/lock_set.hpp"

namespace dblock {

/// Makes `conn`'s open transaction commit only while `lease` is held (see the file's comment).
/// `conn` is a connection to the lock table's database with a transaction begun through it
/// (Connection::begin()). For a unique-key lease, a semaphore permit, a reader-writer lease or a
/// lock set's leases, one statement (a reader-writer lock's writer locks its row exclusively,
/// which every reader's admission waits for; a reader share-locks its own, which the writer's
/// wait for the readers waits for). For a row-lock or optimistic lease, `conn` must be the
/// lease's own connection (Lease::connection()), whose transaction already ends with the lock;
/// for a session lease, its own connection borrowed with SessionConnection, whose session holds
/// the lock; nothing is sent for those.
///
/// Throws Error(kLeaseLost) when the lease is gone (expired, taken over, released, its session
/// ended, or held by the process this one was forked from): roll the transaction back.
/// Error(kFailedPrecondition) when `conn` has no open transaction, and on a Galera cluster (where
/// a share lock on one node holds back no takeover on another). Error(kInvalidArgument) for an
/// empty lease, or a connection other than a transactional or session lease's own. Database
/// errors as Connection::execute (a serialization failure under REPEATABLE READ when the row
/// changed after the transaction's snapshot: retry the transaction).
DBLOCK_EXPORT void fence(const Lease& lease, Connection& conn);

/// fence() for every lease of `set`, in the set's key order.
DBLOCK_EXPORT void fence(const LeaseSet& set, Connection& conn);

}  // namespace dblock
