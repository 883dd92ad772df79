// SPDX-License-Identifier: Apache-2.0
// A statement and its binding together: the template names its parameters ({{param:key}}), and
// the caller binds values by name, so no caller keeps a per-dialect list of positions. Rendered
// once (when a lock is built), bound per call. Internal.
//
//   Statement release(sql.unique_key.release, dialect, tables);
//   conn.execute(release.sql(), release.bind({{"key", Value(key)}, {"token", Value(token)}}));
//
// PostgreSQL gets $n, one number per name (a name used twice is bound once); MySQL gets ?, bound
// once per use. A name the statement does not use is ignored, so one argument list serves both
// dialects (PostgreSQL's release also takes the NOTIFY channel, MySQL's does not).
//
// Thread-safety: immutable once built; bind() may run on many threads at once.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/table_names.hpp"

// Called across dblock's own libraries (drivers, cleaner): exported from a shared build like
// the public API, but internal (this header is not installed; see docs/install.md).
#pragma GCC visibility push(default)

namespace dblock::detail {

struct Arg {
  std::string_view name;
  Value value;
};

class Statement {
 public:
  Statement() = default;
  // Renders `templ` as render_sql does, {{param:name}} included. An empty template gives an
  // empty statement (a step the dialect does not have).
  Statement(std::string_view templ, Dialect dialect, const TableNames& names,
            bool relaxed_durability = false, bool fair = false);

  const std::string& sql() const noexcept { return sql_; }
  bool empty() const noexcept { return sql_.empty(); }
  // The values in the order the statement takes them. Throws Error(kFailedPrecondition) naming
  // a parameter the statement uses that `args` lacks (a mistake in dblock, caught by its tests).
  std::vector<Value> bind(std::span<const Arg> args) const;
  std::vector<Value> bind(std::initializer_list<Arg> args) const {
    return bind(std::span<const Arg>(args.begin(), args.size()));
  }

 private:
  std::string sql_;
  std::vector<std::string> parameters_;  // the name bound at each position
};

}  // namespace dblock::detail

#pragma GCC visibility pop
