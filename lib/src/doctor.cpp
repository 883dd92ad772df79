// SPDX-License-Identifier: Apache-2.0
#include "dblock/doctor.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "dblock/error.hpp"
#include "dblock/history.hpp"
#include "dblock/migrator.hpp"
#include "doctor_privileges.hpp"
#include "enum_names.hpp"
#include "galera.hpp"
#include "sql/server_sql.hpp"

namespace dblock {

namespace {

using Status = Finding::Status;

// The oldest versions the suites run against (docs/testing.md, "PostgreSQL versions";
// docs/platforms.md).
constexpr int kTestedPostgreSQL = 12;
constexpr int kTestedMariaDBMajor = 10, kTestedMariaDBMinor = 11;

// "15.8 (Debian 15.8-0+deb12u1)" / "10.11.6-MariaDB-0+deb12u1" -> {15, 8} / {10, 11}.
std::pair<int, int> major_minor(const std::string& version) {
  int major = 0, minor = 0;
  std::sscanf(version.c_str(), "%d.%d", &major, &minor);  // NOLINT: what is not read stays 0
  return {major, minor};
}

std::string text(const Result& r, std::string_view column) {
  return r.empty() ? std::string() : r.at(0, column).value_or("");
}

// What the server said in a driver's error, without the server's name in front (the doctor
// talks to one) and the advice on credentials behind (a finding gives its own).
std::string server_words(const Error& e) {
  std::string_view what = e.what();
  if (const auto colon = what.find(": "); colon != std::string_view::npos) {
    what.remove_prefix(colon + 2);
  }
  return std::string(what.substr(0, what.find("; check the user name and password")));
}

// What the migrations check found.
enum class Migrated { kAll, kPending, kUnreadable };

class Doctor {
 public:
  Doctor(Connection& conn, const TableNames& tables, DoctorRole role)
      : conn_(conn),
        tables_(tables),
        role_(role),
        dialect_(conn.dialect()),
        sql_(detail::server_sql(conn_.server()).doctor),
        session_sql_(detail::server_sql(conn_.server()).session) {}

  std::vector<Finding> run() {
    guarded("server", [&] { server(); });
    bool writable = false;
    guarded("writable", [&] { writable = check_writable(); });
    if (writable) {
      guarded("replication", [&] { replication(); });
    } else {
      add("replication", Status::kWarning,
          "not checked: it is judged on the primary (a standby or replica streams nothing)", "");
    }
    guarded("isolation", [&] { isolation(); });
    guarded("time_zone", [&] { time_zone(); });
    guarded("clock", [&] { clock(); });
    const Migrated migrated = migrations();
    guarded("history", [&] { history(); });
    if (writable && migrated != Migrated::kPending) {
      // Also when the migrations table could not be read: what is missing is named here.
      guarded("privileges", [&] {
        detail::Privileges privileges(conn_, tables_);
        findings_.push_back(privileges.check(role_));
        if (role_ == DoctorRole::kApplication) findings_.push_back(privileges.cleaner_warning());
      });
    } else {
      const std::string why = !writable ? "not checked: the server is not writable"
                                        : "not checked: dblock's tables are not all there";
      add("privileges", Status::kWarning, why, "");
      if (role_ == DoctorRole::kApplication) add("cleaner", Status::kWarning, why, "");
    }
    return std::move(findings_);
  }

 private:
  void add(std::string check, Status status, std::string message, std::string advice) {
    findings_.push_back({std::move(check), status, std::move(message), std::move(advice)});
  }

  // Runs `check`; a privilege the user lacks to look becomes the check's finding (a failure:
  // the guarantee could not be checked), not an error.
  template <typename Check>
  void guarded(std::string_view name, Check check) {
    try {
      check();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kAccessDenied && e.code() != ErrorCode::kUndefinedTable) throw;
      add(std::string(name), Status::kFailure, "could not check: " + server_words(e),
          e.code() == ErrorCode::kAccessDenied
              ? "grant this user what the check reads (schema/grants/ lists what each role "
                "needs), or run the doctor as a user that may"
              : "run `dblock migrate up` with the same --prefix/--schema");
    }
  }

  void server() {
    const Result r = conn_.execute(sql_.server);
    const std::string version = text(r, "version");
    const std::string flavour = text(r, "flavour");
    const auto [major, minor] = major_minor(version);
    std::string message = flavour + " " + version;
    if (flavour == "PostgreSQL") {
      if (major >= kTestedPostgreSQL) {
        add("server", Status::kOk, message + " (tested: 12 to 18)", "");
      } else {
        add("server", Status::kWarning, message + ": older than any version tested (12 to 18)",
            "upgrade to PostgreSQL 12 or later");
      }
    } else if (flavour == "MariaDB") {
      if (major > kTestedMariaDBMajor ||
          (major == kTestedMariaDBMajor && minor >= kTestedMariaDBMinor)) {
        add("server", Status::kOk, message + " (tested: 10.11)", "");
      } else {
        add("server", Status::kWarning, message + ": older than the version tested (10.11)",
            "upgrade to MariaDB 10.11 or later");
      }
    } else {
      add("server", Status::kWarning,
          message + ": MySQL's statements are checked by reading only, not tested here",
          "MariaDB 10.11 or PostgreSQL 12 and later are the tested servers");
    }
  }

  bool check_writable() {
    const std::string state = text(conn_.execute(sql_.writable), "state");
    if (state.empty()) {
      add("writable", Status::kOk, "a writable primary", "");
      return true;
    }
    if (state == "standby") {
      add("writable", Status::kFailure,
          "this server is a standby (in recovery): lock statements are writes and fail here",
          "point dblock at the primary; with several hosts in one URL add "
          "target_session_attrs=read-write");
    } else {
      add("writable", Status::kFailure,
          "this server (or session) is read-only: lock statements are writes and fail here",
          dialect_ == Dialect::kPostgreSQL
              ? "point dblock at the primary, or turn default_transaction_read_only off for its "
                "user"
              : "point dblock at the primary (read_only is ON, as on a replica)");
    }
    return false;
  }

  void replication() {
    if (dialect_ == Dialect::kPostgreSQL) {
      postgresql_replication();
    } else {
      mysql_replication();
    }
  }

  void postgresql_replication() {
    const Result r = conn_.execute(sql_.replication);
    const std::string commit = text(r, "synchronous_commit");
    const std::string names = text(r, "standby_names");
    const std::int64_t standbys = r.int64_at(0, "standbys");
    const std::int64_t synchronous = r.int64_at(0, "synchronous");
    const std::int64_t hidden = r.int64_at(0, "hidden");
    const std::string counted = std::to_string(standbys) + " standby(s) streaming, " +
                                std::to_string(synchronous) + " synchronous";
    if (names.empty()) {
      if (standbys == 0) {
        add("replication", Status::kOk,
            "a single server: no standby streams from it and none is required (a lock write "
            "stays once committed, as long as the server's disk does)",
            "");
      } else {
        add("replication", Status::kFailure,
            counted +
                ", synchronous_standby_names empty: promoting an asynchronous standby loses "
                "acknowledged lock writes (two holders of a key, a fencing token handed out twice)",
            "list the standby in synchronous_standby_names (synchronous_commit on or "
            "remote_apply), or never fail over to an asynchronous standby");
      }
      return;
    }
    if (commit == "off" || commit == "local") {
      add("replication", Status::kFailure,
          "synchronous_commit = " + commit +
              ": commits do not wait for the synchronous standby, so a failover can lose "
              "acknowledged lock writes",
          "set synchronous_commit = on (or remote_apply) for dblock's user: ALTER ROLE ... SET "
          "synchronous_commit = on");
      return;
    }
    if (hidden > 0 && synchronous == 0) {
      add("replication", Status::kWarning,
          std::to_string(standbys) +
              " standby(s) streaming whose state this role may not see; synchronous_standby_names "
              "= '" +
              names + "'",
          "run the doctor as a role with pg_read_all_stats to check that a standby is "
          "synchronous");
      return;
    }
    if (synchronous == 0) {
      add("replication", Status::kWarning,
          "synchronous_standby_names = '" + names + "' but no synchronous standby is connected (" +
              counted + "): every commit, so every acquire and release, waits until one is",
          "start the standby, or fix synchronous_standby_names to name it");
      return;
    }
    if (commit == "remote_write") {
      add("replication", Status::kWarning,
          counted +
              ", synchronous_commit = remote_write: a commit is acknowledged before the "
              "standby flushed it, so a crash of both at once can lose it",
          "set synchronous_commit = on (or remote_apply)");
      return;
    }
    add("replication", Status::kOk,
        counted + ", synchronous_commit = " + commit +
            ": a failover to a synchronous standby keeps every acknowledged lock write (a commit "
            "whose standby wait is cancelled is reported as kCommitInDoubt)",
        "");
  }

  void mysql_replication() {
    std::map<std::string, std::string> status;
    const Result r = conn_.execute(sql_.replication);
    for (std::size_t i = 0; i < r.size(); ++i) {
      status[r.at(i, "Variable_name").value_or("")] = r.at(i, "Value").value_or("");
    }
    if (detail::galera_node(conn_)) {
      const std::string size = status["wsrep_cluster_size"];
      if (status["wsrep_cluster_status"] != "Primary" || status["wsrep_ready"] != "ON") {
        add("replication", Status::kFailure,
            "a Galera node outside the primary component (wsrep_cluster_status = " +
                status["wsrep_cluster_status"] + ", wsrep_ready = " + status["wsrep_ready"] +
                "): it refuses writes",
            "point dblock at a node of the primary component, or bring this one back into it");
        return;
      }
      add("replication", Status::kOk,
          "a Galera cluster of " + size +
              " nodes: unique-key and optimistic locks hold across nodes; row locks only on the "
              "node that took them (RowLock refuses Galera unless galera_single_writer is set); "
              "tokens come from the node clocks, so keep them in sync (NTP)",
          "");
      return;
    }
    const bool semisync = status["Rpl_semi_sync_master_status"] == "ON" ||
                          status["Rpl_semi_sync_source_status"] == "ON";
    const auto replicas = status.find("Slaves_connected");
    if (semisync) {
      add("replication", Status::kOk,
          "semi-synchronous replication is on: a commit is acknowledged once a replica has it "
          "(unless it falls back to asynchronous after rpl_semi_sync_master_timeout)",
          "");
    } else if (replicas != status.end() && replicas->second != "0") {
      add("replication", Status::kFailure,
          replicas->second +
              " replica(s) connected, replication asynchronous: promoting one loses acknowledged "
              "lock writes (two holders of a key, a fencing token handed out twice)",
          "turn on semi-synchronous replication, use a Galera cluster, or never promote a "
          "replica while locks are held");
    } else if (replicas != status.end()) {
      add("replication", Status::kOk,
          "a single server: no replica connected (a lock write stays once committed, as long as "
          "the server's disk does)",
          "");
    } else {
      add("replication", Status::kOk,
          "no semi-synchronous replication; replicas are not visible from here (MySQL)",
          "if a replica may be promoted, turn on semi-synchronous replication: an asynchronous "
          "replica loses acknowledged lock writes when promoted");
    }
  }

  void isolation() {
    std::string level = detail::last_column(conn_.execute(session_sql_.isolation));
    if (level.empty()) level = "unknown";
    add("isolation", Status::kOk,
        "default isolation " + level +
            ": dblock sets the level its own transactions need, so any default works",
        "");
  }

  void time_zone() {
    add("time_zone", Status::kOk,
        "server time zone " + text(conn_.execute(sql_.time_zone), "zone") +
            ": dblock's times are UTC, so any zone works",
        "");
  }

  void clock() {
    using namespace std::chrono;
    const auto before = system_clock::now();
    const std::int64_t server_us = conn_.execute(sql_.clock).int64_at(0, "us");
    const auto after = system_clock::now();
    const std::int64_t local_us =
        duration_cast<microseconds>((before + (after - before) / 2).time_since_epoch()).count();
    const double offset_ms = static_cast<double>(server_us - local_us) / 1000.0;
    const double within_ms =
        static_cast<double>(duration_cast<microseconds>(after - before).count()) / 2000.0;
    char line[160];
    std::snprintf(line, sizeof line,
                  "the server's clock is %.1f ms %s this host's (within %.1f ms)",
                  std::abs(offset_ms), offset_ms >= 0 ? "ahead of" : "behind", within_ms);
    add("clock", Status::kOk,
        std::string(line) + ": leases run on the server clock only, so this changes no guarantee",
        "");
  }

  Migrated migrations() {
    Migrator migrator(conn_, tables_);
    std::map<MigrationState::Status, int> count;
    std::string denied;  // why the migrations table could not be read
    try {
      for (const auto& m : migrator.status()) ++count[m.status];
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kAccessDenied) throw;
      denied = server_words(e);
    }
    const int pending = count[MigrationState::Status::kPending];
    const int modified = count[MigrationState::Status::kModified];
    const int unknown = count[MigrationState::Status::kUnknown];
    const int applied = count[MigrationState::Status::kApplied];
    // MySQL shows a user only the tables it has a privilege on: "nothing applied" may be a
    // migrations table this user may not read.
    if (denied.empty() && applied + modified + unknown == 0) denied = migrations_denied();
    if (!denied.empty()) {
      add("migrations", Status::kFailure,
          "this user may not read " + tables_.qualified(dialect_, "schema_migrations") + ": " +
              denied,
          "see the privileges finding for the GRANTs it needs");
      return Migrated::kUnreadable;
    }
    const std::string where = "tables " + tables_.qualified(dialect_, "locks") + " and the rest";
    if (pending > 0) {
      add("migrations", Status::kFailure,
          std::to_string(pending) + " migration(s) not applied to " + where,
          "run `dblock migrate up` with the same --prefix/--schema");
      return Migrated::kPending;
    }
    if (modified > 0) {
      add("migrations", Status::kFailure,
          std::to_string(modified) + " applied migration(s) differ from this dblock's",
          "run `dblock migrate status` and use the dblock version that applied them");
      return Migrated::kAll;
    }
    if (unknown > 0) {
      add("migrations", Status::kWarning,
          std::to_string(unknown) +
              " migration(s) applied that this dblock does not know: the "
              "tables are newer than this program",
          "upgrade dblock to the version that applied them");
      return Migrated::kAll;
    }
    add("migrations", Status::kOk, "all " + std::to_string(applied) + " migrations applied", "");
    return Migrated::kAll;
  }

  // The history of holds (history.hpp): off, on, or on without its table, when every statement
  // that ends a hold fails in its trigger.
  void history() {
    const std::string table = tables_.qualified(dialect_, "history");
    if (!history_enabled(conn_, tables_)) {
      add("history", Status::kOk,
          dialect_ == Dialect::kPostgreSQL
              ? "off: ended holds are not recorded (`dblock history enable` records them)"
              : "off, or its triggers are hidden from this user (MySQL shows them to users with "
                "TRIGGER on the lock table): `dblock history enable` records ended holds",
          "");
      return;
    }
    try {
      read_history(conn_, tables_, "", HistoryQuery{.since = std::nullopt, .limit = 1});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUndefinedTable) throw;
      add("history", Status::kFailure,
          "the history's triggers are on but table " + table +
              " is missing: every statement that ends a hold fails",
          "run `dblock migrate up` (migration 0009 creates it), or `dblock history disable`");
      return;
    }
    add("history", Status::kOk, "on: ended holds are recorded in " + table, "");
  }

  // The server's refusal to read the migrations table, or "" when it may (or the table is
  // missing).
  std::string migrations_denied() {
    std::string sql = detail::replace_all(std::string(sql_.probe_select), "{{target}}",
                                          tables_.qualified(dialect_, "schema_migrations"));
    sql = detail::replace_all(std::move(sql), "{{column}}", quote_identifier(dialect_, "version"));
    try {
      conn_.execute(sql);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kAccessDenied) return server_words(e);
      if (e.code() != ErrorCode::kUndefinedTable) throw;
    }
    return "";
  }

  Connection& conn_;
  const TableNames& tables_;
  DoctorRole role_;
  Dialect dialect_;
  const detail::DoctorSql& sql_;
  const detail::SessionSql& session_sql_;
  std::vector<Finding> findings_;
};

}  // namespace

std::string_view to_string(Finding::Status status) noexcept {
  constexpr auto kNames =
      detail::enum_names<Finding::Status::kFailure>({"ok", "warning", "failure"});
  return kNames.of(status, "unknown");
}

std::string_view to_string(DoctorRole role) noexcept {
  constexpr auto kNames = detail::enum_names<DoctorRole::kMigrator>({"app", "cleaner", "migrator"});
  return kNames.of(role, "unknown");
}

std::vector<Finding> check_deployment(Connection& conn, const TableNames& tables, DoctorRole role) {
  return Doctor(conn, tables, role).run();
}

}  // namespace dblock
