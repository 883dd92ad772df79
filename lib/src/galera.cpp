// SPDX-License-Identifier: Apache-2.0
#include "galera.hpp"

#include <charconv>

#include "dblock/error.hpp"
#include "sql/server_sql.hpp"

namespace dblock::detail {

bool galera_node(Connection& conn) {
  const auto& sql = server_sql(conn.server()).session;
  if (sql.galera_check.empty()) return false;
  return last_column(conn.execute(sql.galera_check)) == "ON";
}

void GaleraCheck::refuse_on_galera(Connection& conn, const std::string& refusal) {
  int known = known_.load();
  if (known < 0) {
    known = galera_node(conn) ? 1 : 0;
    known_ = known;
  }
  if (known == 1) throw Error(ErrorCode::kFailedPrecondition, refusal);
}

CausalReads::CausalReads(Connection& conn) : conn_(conn) {
  if (!galera_node(conn_)) return;
  const auto& sql = server_sql(conn_.server()).session;
  const std::string current = last_column(conn_.execute(sql.galera_sync_wait));
  long bits = 0;
  const auto parsed = std::from_chars(current.data(), current.data() + current.size(), bits);
  if (parsed.ec != std::errc() || (bits & 1) != 0) return;  // unreadable, or already causal
  conn_.execute("SET SESSION wsrep_sync_wait = " + std::to_string(bits | 1));
  previous_ = current;
}

CausalReads::~CausalReads() {
  if (!previous_ || conn_.broken()) return;
  try {
    conn_.execute("SET SESSION wsrep_sync_wait = " + *previous_);
  } catch (const Error&) {
    // The session keeps causal reads: slower reads, never wrong ones.
  }
}

}  // namespace dblock::detail
