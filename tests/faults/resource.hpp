// SPDX-License-Identifier: Apache-2.0
// The test's `resource` table (id, token, writer), as the critical sections of the scenarios
// write it. Row 1 is shared: the unique-key scenarios fence it with their token (fault_fixture,
// fault_worker); the transactional strategies use its token column as a counter that each
// critical section increments in the lease's own transaction, so the counter equals the commits
// when no update was lost and none was applied twice.
//
// Thread-safety: plain functions; a connection is used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

namespace dblock::testing {

// UPDATE resource SET token = token + 1, writer = `writer` WHERE id = 1. Returns rows changed.
std::uint64_t increment_counter(Connection& conn, const TableNames& tables,
                                const std::string& writer);

// INSERT INTO resource (id, token, writer) VALUES (`id`, 0, `writer`): a row that exists only if
// the transaction that wrote it committed.
void insert_mark(Connection& conn, const TableNames& tables, std::int64_t id,
                 const std::string& writer);

}  // namespace dblock::testing
