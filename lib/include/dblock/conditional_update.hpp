// SPDX-License-Identifier: Apache-2.0
/// @file
/// Compare-and-set on the caller's own tables: one UPDATE of one row, by primary key, that applies
/// only while a condition holds, and says from the affected-row count whether it did. Table and
/// column names are validated identifiers ("schema.table" allowed) and quoted; values are bound.
/// Run it on the connection of a transactional lease to commit it together with the lease, or on
/// any connection in autocommit.
///
/// @code
///   // predicate CAS: sell one unit while any are left
///   auto sold = dblock::conditional_update(conn, {
///       .table = "vouchers", .key_column = "id", .key = 7,
///       .set = {dblock::Assignment::add("stock", -1)},
///       .where = {{"stock", ">", 0}}});
///
///   // versioned update: write only if nobody changed the row since we read version 41
///   auto saved = dblock::versioned_update(conn, {
///       .table = "accounts", .key_column = "id", .key = 9, .version_column = "version",
///       .expected_version = 41, .set = {dblock::Assignment::value("balance", 120)}});
/// @endcode
///
/// Both return kApplied when exactly one row matched and was updated, kConflict when none did (the
/// condition or version did not hold, or no row has that key). Counts are matched rows on every
/// driver, so an assignment that leaves a value as it was still counts as applied. More than one
/// matching row (key_column is not unique) throws Error(kInvalidArgument) after the UPDATE ran;
/// inside a transaction, roll back (drop the lease) to undo it.
///
/// Thread-safety: as the Connection it runs on.
///
/// Explained in docs/locks/optimistic.md ("Compare-and-set on your own tables").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/export.hpp"

namespace dblock {

struct Assignment {
  enum class Kind { kValue, kAdd };
  std::string column;
  Kind kind = Kind::kValue;
  Value operand;

  static Assignment value(std::string column, Value v) {
    return {std::move(column), Kind::kValue, std::move(v)};
  }
  static Assignment add(std::string column, std::int64_t delta) {
    return {std::move(column), Kind::kAdd, Value(static_cast<long long>(delta))};
  }
};

struct Condition {
  std::string column;
  std::string op;  ///< = <> < <= > >=
  Value operand;
};

struct ConditionalUpdate {
  std::string table;
  std::string key_column;
  Value key;
  std::vector<Assignment> set;
  std::vector<Condition> where;  ///< all must hold
};

struct VersionedUpdate {
  std::string table;
  std::string key_column;
  Value key;
  std::string version_column;
  std::int64_t expected_version = 0;
  std::vector<Assignment> set;  ///< version_column = version_column + 1 is added
};

enum class CasOutcome { kApplied, kConflict };

DBLOCK_EXPORT std::string_view to_string(CasOutcome outcome) noexcept;

DBLOCK_EXPORT CasOutcome conditional_update(Connection& conn, const ConditionalUpdate& update);
DBLOCK_EXPORT CasOutcome versioned_update(Connection& conn, const VersionedUpdate& update);

}  // namespace dblock
