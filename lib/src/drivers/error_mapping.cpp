// SPDX-License-Identifier: Apache-2.0
// The drivers' error mapping (drivers/error_mapping.hpp): SQLSTATE and MySQL errno tables, and
// the text, SQLSTATE, errno and advice of the Error a driver throws.
//
// Thread-safety: pure functions.
#include "drivers/error_mapping.hpp"

#include <string>
#include <utility>

#include "dblock/url.hpp"

namespace dblock::detail {

ErrorCode code_from_sqlstate(std::string_view s) noexcept {
  if (s == "23505") return ErrorCode::kUniqueViolation;
  if (s == "55P03")
    return ErrorCode::kLockNotAvailable;  // lock_not_available (NOWAIT, lock_timeout)
  if (s == "40P01") return ErrorCode::kDeadlock;
  if (s == "40001") return ErrorCode::kSerializationFailure;
  // Table, schema, column (a table older than this version of dblock).
  if (s == "42P01" || s == "3F000" || s == "42703") return ErrorCode::kUndefinedTable;
  if (s == "28P01" || s == "28000" || s == "42501") return ErrorCode::kAccessDenied;
  if (s == "3D000") return ErrorCode::kConnectFailed;  // database does not exist
  if (s.starts_with("08") || s == "57P01" || s == "57P02" || s == "57P03") {
    return ErrorCode::kConnectionLost;  // connection exceptions, admin/crash shutdown
  }
  if (s == "57014") return ErrorCode::kLockWaitTimeout;  // query_canceled (statement_timeout)
  if (s.starts_with("22") || s == "42601") return ErrorCode::kInvalidArgument;
  return ErrorCode::kOther;
}

ErrorCode code_from_mysql_errno(unsigned int e) noexcept {
  switch (e) {
    case 1062:  // ER_DUP_ENTRY
    case 1586:  // ER_DUP_ENTRY_WITH_KEY_NAME
      return ErrorCode::kUniqueViolation;
    case 3572:  // ER_LOCK_NOWAIT (MySQL 8)
      return ErrorCode::kLockNotAvailable;
    case 1205:  // ER_LOCK_WAIT_TIMEOUT (MariaDB also for NOWAIT / WAIT n)
    case 1969:  // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time, as PostgreSQL's 57014)
    case 3024:  // ER_QUERY_TIMEOUT (MySQL MAX_EXECUTION_TIME)
      return ErrorCode::kLockWaitTimeout;
    case 1213:  // ER_LOCK_DEADLOCK
      return ErrorCode::kDeadlock;
    // ER_CHECKREAD: under REPEATABLE READ with MariaDB's innodb_snapshot_isolation (on by
    // default from 11.6.2; 10.11 has it, off), a row changed by another transaction since this
    // one's snapshot cannot be locked or written; InnoDB rolls the whole transaction back, as
    // for a deadlock. The same verdict as PostgreSQL's 40001 under REPEATABLE READ.
    case 1020:
      return ErrorCode::kSerializationFailure;
    case 1146:  // ER_NO_SUCH_TABLE
    case 1054:  // ER_BAD_FIELD_ERROR: a table older than this version of dblock
    case 1049:  // ER_BAD_DB_ERROR
      return e == 1049 ? ErrorCode::kConnectFailed : ErrorCode::kUndefinedTable;
    case 1045:  // ER_ACCESS_DENIED_ERROR
    case 1044:  // ER_DBACCESS_DENIED_ERROR
    case 1142:  // ER_TABLEACCESS_DENIED_ERROR
    case 1143:  // ER_COLUMNACCESS_DENIED_ERROR
    case 1227:  // ER_SPECIFIC_ACCESS_DENIED_ERROR
      return ErrorCode::kAccessDenied;
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2005:  // CR_UNKNOWN_HOST
    case 1040:  // ER_CON_COUNT_ERROR
    // ER_UNKNOWN_COM_ERROR: on a Galera node, "WSREP has not yet prepared node for application
    // use" (joining, or outside the primary component): this server cannot serve now.
    case 1047:
      return ErrorCode::kConnectFailed;
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2055:  // CR_SERVER_LOST_EXTENDED
    case 1927:  // ER_CONNECTION_KILLED (MariaDB)
    case 1053:  // ER_SERVER_SHUTDOWN
    case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
      return ErrorCode::kConnectionLost;
    case 1064:  // ER_PARSE_ERROR
    case 1406:  // ER_DATA_TOO_LONG
    case 1366:  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    case 1300:  // ER_INVALID_CHARACTER_STRING
      return ErrorCode::kInvalidArgument;
    default:
      return ErrorCode::kOther;
  }
}

namespace {

// Runs of whitespace (newlines included) as one space, none at the ends.
std::string collapse_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string_view advice(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUndefinedTable:
      return "run `dblock migrate up` to create dblock's tables or bring them up to this version";
    case ErrorCode::kAccessDenied:
      return "check the user name and password (in the URL, DBLOCK_PASSWORD or "
             "DBLOCK_PASSWORD_FILE) and the user's privileges";
    case ErrorCode::kConnectFailed:
      return "check that the server is running and that the URL's host, port and database are "
             "right";
    case ErrorCode::kConnectionLost:
      return "the connection to the server was lost; open a new connection (a pool does this) "
             "and retry only idempotent work";
    default:
      return {};
  }
}

}  // namespace

Error driver_error(ErrorCode code, std::string_view where, std::string_view message,
                   std::string_view secret, std::string sqlstate, int server_errno) {
  std::string text(where);
  text += ": ";
  text += collapse_whitespace(scrub(message, secret));
  if (!sqlstate.empty() || server_errno != 0) {
    text += " (";
    if (!sqlstate.empty()) text += "SQLSTATE " + sqlstate;
    if (!sqlstate.empty() && server_errno != 0) text += ", ";
    if (server_errno != 0) text += "error " + std::to_string(server_errno);
    text += ")";
  }
  if (sqlstate == "53300" || server_errno == 1040) {
    text +=
        "; the server has no free connection slots: lower the pool sizes or raise the "
        "server's max_connections";
  } else if (auto a = advice(code); !a.empty()) {
    text += "; ";
    text += a;
  }
  return Error(code, text, std::move(sqlstate), server_errno);
}

std::string server_location(Dialect dialect, std::string_view host, std::string_view port,
                            std::string_view database) {
  std::string out = dialect == Dialect::kPostgreSQL ? "PostgreSQL " : "MySQL ";
  if (host.find(':') != std::string_view::npos) {
    out.append("[").append(host).append("]");
  } else {
    out.append(host.empty() ? std::string_view("(default socket)") : host);
  }
  out.append(":").append(port).append("/").append(database);
  return out;
}

ErrorCode libpq_connect_code(std::string_view message) noexcept {
  auto contains = [&](std::string_view part) {
    return message.find(part) != std::string_view::npos;
  };
  if (contains("authentication failed") || contains("no pg_hba.conf entry") ||
      contains("no password supplied") || contains("permission denied") ||
      (contains("role \"") && contains("does not exist"))) {
    return ErrorCode::kAccessDenied;
  }
  if (contains("invalid connection option") || contains("for connection option") ||
      contains("invalid port number") || (contains("invalid ") && contains(" value: ")) ||
      contains("missing \"=\" after") || contains("unterminated quoted string") ||
      contains("invalid URI query parameter") || contains("percent-encod") ||
      contains("could not match")) {
    return ErrorCode::kInvalidArgument;
  }
  // Refused, unreachable, unknown host, timeout, unknown database, too many connections,
  // server starting up or shutting down.
  return ErrorCode::kConnectFailed;
}

std::string libpq_message_text(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.starts_with("LINE ") || line.find_first_not_of(" ^\t\r") == std::string_view::npos) {
      continue;
    }
    if (line.starts_with("ERROR:")) line.remove_prefix(6);
    if (!out.empty()) out += ' ';
    out += line;
  }
  return out;
}

bool is_sync_replication_cancelled(std::string_view notice) noexcept {
  // "canceling wait for synchronous replication due to user request" (or "... due to
  // statement timeout"). The FATAL variant ("canceling the wait for synchronous replication and
  // terminating connection") ends the session, which the drivers report as a lost connection.
  return notice.find("canceling wait for synchronous replication") != std::string_view::npos;
}

Error sync_replication_cancelled_error(std::string_view where) {
  return driver_error(ErrorCode::kCommitInDoubt, where,
                      "the server committed locally, but its wait for the synchronous standby "
                      "was cancelled: the standby may not have the commit, and a failover now "
                      "would lose it; read what is there before redoing the work",
                      {});
}

Error copy_refused_error(std::string_view where) {
  return driver_error(ErrorCode::kInvalidArgument, where,
                      "COPY is not supported through dblock::Connection; the COPY was ended and "
                      "the connection goes on (run COPY through the driver's own handle)",
                      {});
}

}  // namespace dblock::detail
