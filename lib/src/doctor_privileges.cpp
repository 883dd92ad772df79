// SPDX-License-Identifier: Apache-2.0
// The privilege checks of `dblock doctor` (see doctor_privileges.hpp).
#include "doctor_privileges.hpp"

#include "dblock/error.hpp"
#include "enum_names.hpp"
#include "galera.hpp"
#include "sql/statement.hpp"

namespace dblock::detail {

namespace {

using Status = Finding::Status;

std::string text(const Result& r, std::string_view column) {
  return r.empty() ? std::string() : r.at(0, column).value_or("");
}

// `name` between `quote`s, a `quote` inside doubled.
std::string quote_name(std::string_view name, char quote) {
  std::string out(1, quote);
  for (char c : name) {
    if (c == quote) out += quote;
    out += c;
  }
  out += quote;
  return out;
}

// 'user'@'host' from CURRENT_USER()'s user@host.
std::string mysql_account(std::string_view user_at_host) {
  const auto at = user_at_host.rfind('@');
  std::string user(user_at_host.substr(0, at));
  std::string host(at == std::string_view::npos ? "%" : user_at_host.substr(at + 1));
  std::string out;
  for (const std::string* part : {&user, &host}) {
    if (!out.empty()) out += '@';
    std::string escaped;
    for (char c : *part) escaped += c == '\\' ? "\\\\" : std::string(1, c);
    out += quote_name(escaped, '\'');
  }
  return out;
}

std::string join(const std::vector<std::string_view>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// What `role` needs on dblock's table `base` (one the cleaner empties, or schema_migrations),
// in the order a GRANT lists them, on a Galera node or not. "OWNER": the table's owner
// (PostgreSQL's CREATE INDEX and ALTER TABLE need it).
std::vector<std::string_view> table_needs(DoctorRole role, Dialect dialect, bool galera,
                                          std::string_view base) {
  const bool postgresql = dialect == Dialect::kPostgreSQL;
  const bool migrations = base == "schema_migrations";
  switch (role) {
    case DoctorRole::kApplication:
      if (migrations) return {"SELECT"};  // `dblock doctor` and `migrate status` read it
      // `dblock history` reads it; the triggers write it with their owner's rights.
      if (base == "history") return {"SELECT"};
      // Fair waiting deletes its queue places; no other lock statement deletes.
      if (base == "lock_waiters") return {"SELECT", "INSERT", "UPDATE", "DELETE"};
      return {"SELECT", "INSERT", "UPDATE"};
    case DoctorRole::kCleaner:
      if (migrations) return {"SELECT"};
      // PostgreSQL: the cleaner's SELECT ... FOR UPDATE SKIP LOCKED needs UPDATE.
      if (postgresql) return {"SELECT", "UPDATE", "DELETE"};
      return {"SELECT", "DELETE"};
    case DoctorRole::kMigrator:
      if (postgresql) return {"OWNER"};
      // DELETE: on a Galera cluster the run's lock is a row of the migrations table.
      if (migrations && galera) return {"SELECT", "INSERT", "DELETE", "CREATE", "ALTER"};
      return {"SELECT", "INSERT", "CREATE", "ALTER"};
  }
  return {};
}

std::string_view ok_message(DoctorRole role) {
  constexpr auto kMessages = enum_names<DoctorRole::kMigrator>(
      {"this user may take, renew and release locks of every strategy",
       "this user may run the cleaner on every table it empties",
       "this user may apply dblock's migrations"});
  return kMessages.of(role, "");
}

}  // namespace

Privileges::Privileges(Connection& conn, const TableNames& tables)
    : conn_(conn),
      tables_(tables),
      dialect_(conn.dialect()),
      sql_(server_sql(conn.server()).doctor),
      galera_(galera_node(conn)) {
  for (const CleanedTable& cleaned : server_sql(conn.server()).cleaner.tables) {
    tables_checked_.push_back(cleaned.base);
  }
  tables_checked_.push_back("schema_migrations");
  const Result who = conn_.execute(sql_.identity);
  schema_ = tables_.schema().empty() ? text(who, "schema_name") : tables_.schema();
  const std::string user = text(who, "user_name");
  grantee_ = dialect_ == Dialect::kPostgreSQL ? quote_name(user, '"') : mysql_account(user);
}

std::string Privileges::qualified(std::string_view base) const {
  const char quote = dialect_ == Dialect::kPostgreSQL ? '"' : '`';
  return quote_name(schema_, quote) + "." + quote_name(tables_.name(base), quote);
}

std::string Privileges::grant(const std::vector<std::string_view>& privileges,
                              std::string_view base) const {
  return "GRANT " + join(privileges, ", ") + " ON " + qualified(base) + " TO " + grantee_ + ";";
}

bool Privileges::has(std::string_view base, std::string_view privilege) {
  const auto key = std::make_pair(std::string(base), std::string(privilege));
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  bool allowed = false;
  if (privilege == "OWNER") {
    const std::string sql =
        replace_all(std::string(sql_.owner), "{{target}}", tables_.qualified(dialect_, base));
    const Result r = conn_.execute(sql);
    allowed = !r.empty() && r.int64_at(0, "ok") == 1;
  } else if (base == "row_lock_tokens") {  // the sequence: USAGE
    const Result r = conn_.execute(render_sql(sql_.sequence_usage, dialect_, tables_));
    allowed = r.int64_at(0, "ok") == 1;
  } else {
    const std::string_view templ = privilege == "SELECT"   ? sql_.probe_select
                                   : privilege == "INSERT" ? sql_.probe_insert
                                   : privilege == "UPDATE" ? sql_.probe_update
                                   : privilege == "DELETE" ? sql_.probe_delete
                                   : privilege == "CREATE" ? sql_.probe_create
                                                           : sql_.probe_alter;
    std::string sql =
        replace_all(std::string(templ), "{{target}}", tables_.qualified(dialect_, base));
    sql = replace_all(
        std::move(sql), "{{column}}",
        quote_identifier(dialect_, base == "schema_migrations" ? "version" : "lock_key"));
    try {
      conn_.execute(sql);
      allowed = true;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kAccessDenied) throw;
    }
  }
  cache_.emplace(key, allowed);
  return allowed;
}

std::vector<Privileges::Missing> Privileges::missing_for(DoctorRole role) {
  std::vector<Missing> out;
  const bool postgresql = dialect_ == Dialect::kPostgreSQL;
  if (postgresql) {
    const Statement st(sql_.schema_privileges, dialect_, tables_);
    const Result r = conn_.execute(st.sql(), st.bind({{"schema", Value(schema_)}}));
    std::vector<std::string_view> lacking;
    if (r.int64_at(0, "usage") != 1) lacking.push_back("USAGE");
    if (role == DoctorRole::kMigrator && r.int64_at(0, "create") != 1) lacking.push_back("CREATE");
    if (!lacking.empty()) {
      out.push_back({"schema " + quote_name(schema_, '"'), lacking,
                     "GRANT " + join(lacking, ", ") + " ON SCHEMA " + quote_name(schema_, '"') +
                         " TO " + grantee_ + ";"});
    }
    // Without USAGE every probe of a table in the schema fails alike: give that first.
    if (!lacking.empty() && lacking.front() == "USAGE") return out;
  }
  for (const std::string_view base : tables_checked_) {
    std::vector<std::string_view> lacking;
    for (const std::string_view privilege : table_needs(role, dialect_, galera_, base)) {
      if (!has(base, privilege)) lacking.push_back(privilege);
    }
    if (lacking.empty()) continue;
    const bool owner = lacking.front() == "OWNER";
    out.push_back({tables_.qualified(dialect_, base), lacking,
                   owner ? "ALTER TABLE " + qualified(base) + " OWNER TO " + grantee_ + ";"
                         : grant(lacking, base)});
  }
  if (postgresql && role != DoctorRole::kCleaner) {
    // Row-lock fencing tokens come from a sequence.
    const std::string_view privilege = role == DoctorRole::kMigrator ? "OWNER" : "USAGE";
    if (!has("row_lock_tokens", privilege)) {
      const std::string sequence = qualified("row_lock_tokens");
      out.push_back({"sequence " + tables_.qualified(dialect_, "row_lock_tokens"),
                     {privilege},
                     privilege == "OWNER"
                         ? "ALTER SEQUENCE " + sequence + " OWNER TO " + grantee_ + ";"
                         : "GRANT USAGE ON SEQUENCE " + sequence + " TO " + grantee_ + ";"});
    }
  }
  return out;
}

namespace {

// "USAGE on schema "public"; INSERT, UPDATE on "dblock_locks"; ownership of ..." and the fixes.
std::pair<std::string, std::string> describe(const auto& missing) {
  std::string what, fixes;
  for (const auto& m : missing) {
    if (!what.empty()) what += "; ";
    what += m.privileges.front() == "OWNER" ? "ownership of " + m.object
                                            : join(m.privileges, ", ") + " on " + m.object;
    if (!fixes.empty()) fixes += ' ';
    fixes += m.fix;
  }
  return {what, fixes};
}

}  // namespace

Finding Privileges::check(DoctorRole role) {
  const auto missing = missing_for(role);
  if (missing.empty()) return {"privileges", Status::kOk, std::string(ok_message(role)), ""};
  auto [what, fixes] = describe(missing);
  if (missing.front().object.starts_with("schema ") && missing.front().privileges[0] == "USAGE") {
    what += " (its privileges on the tables are checked once it has USAGE on the schema)";
  }
  const std::string file =
      dialect_ == Dialect::kPostgreSQL ? "schema/grants/postgresql.sql" : "schema/grants/mysql.sql";
  return {"privileges", Status::kFailure, "this user lacks " + what,
          fixes + " (as the tables' owner or an administrator; " + file +
              " lists what each role needs)"};
}

Finding Privileges::cleaner_warning() {
  const auto missing = missing_for(DoctorRole::kCleaner);
  if (missing.empty()) return {"cleaner", Status::kOk, "this user may also run the cleaner", ""};
  auto [what, fixes] = describe(missing);
  return {"cleaner", Status::kWarning, "this user cannot run the cleaner: it lacks " + what,
          "run `dblock clean` as a user that has them (check it with `dblock doctor --role "
          "cleaner` and that user's URL), or: " +
              fixes};
}

}  // namespace dblock::detail
