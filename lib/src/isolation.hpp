// SPDX-License-Identifier: Apache-2.0
// The isolation level of the transactions dblock opens itself (row-lock and optimistic leases,
// cleaner batches), whatever default the server or the user's role sets. Each strategy is made
// for one level, and a stricter session default breaks it: under PostgreSQL's REPEATABLE READ a
// row lock granted after a wait fails with a serialization error, and SERIALIZABLE (either
// server) turns reads into predicate or shared locks, so unrelated keys abort or block each
// other. The session's default is read once per lock object (its connections come from one
// source, so they share it) and the level is set for a transaction only when the default
// differs, so the usual server pays no extra round trip. Internal.
//
// Thread-safety: SessionIsolation may be used from many threads at once.
#pragma once

#include <atomic>

#include "dblock/connection.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

enum class Isolation { kUnknown, kReadUncommitted, kReadCommitted, kRepeatableRead, kSerializable };

// Begins a transaction on `conn` at `level` (PostgreSQL: SET TRANSACTION as its first statement;
// MySQL: SET TRANSACTION before START TRANSACTION, which applies to the next transaction only).
void begin_at(Connection& conn, Isolation level);

class SessionIsolation {
 public:
  // The session's default level, asked once (on `conn`) and remembered.
  Isolation default_level(Connection& conn);
  // Begins a transaction at `wanted` when the session's default is any of `unsuitable`...,
  // otherwise a plain begin().
  template <class... Levels>
  void begin(Connection& conn, Isolation wanted, Levels... unsuitable) {
    const Isolation d = default_level(conn);
    if (((d == unsuitable) || ...)) {
      begin_at(conn, wanted);
    } else {
      conn.begin();
    }
  }

 private:
  std::atomic<Isolation> level_{Isolation::kUnknown};
};

}  // namespace dblock::detail

#pragma GCC visibility pop
