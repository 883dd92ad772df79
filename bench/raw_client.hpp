// SPDX-License-Identifier: Apache-2.0
// The baseline: the same statements sent by a plain client loop, without dblock. PostgreSQL goes
// through libpq's PQexecParams with text parameters (what dblock's libpqxx driver sends);
// MySQL/MariaDB through libmysqlclient server-side prepared statements, prepared once per
// connection (what dblock's libmysqlclient driver does). No pool, no error classification, no
// result conversion beyond reading the one number the lock statements hand back (or, through
// query(), the rows as text, for the semaphore's statements that answer with more).
//
// Thread-safety: one RawClient per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dblock/connection.hpp"
#include "dblock/url.hpp"

namespace dblock::bench {

struct RawResult {
  bool has_row = false;    // a row came back (PostgreSQL RETURNING, SELECT)
  std::int64_t first = 0;  // the first column of the first row, when an integer
  std::uint64_t affected = 0;
  std::uint64_t insert_id = 0;  // MySQL: LAST_INSERT_ID() the statement left
};

// Every row of a result, each column as text (NULL: nullopt).
using RawRows = std::vector<std::vector<std::optional<std::string>>>;

class RawClient {
 public:
  virtual ~RawClient() = default;
  // Runs one statement; throws std::runtime_error with the server's message on failure.
  virtual RawResult execute(const std::string& sql, std::span<const Value> params) = 0;
  RawResult execute(const std::string& sql) { return execute(sql, {}); }
  // Runs one statement and hands back every row, every column as text: for the statements whose
  // answer is more than one number (the semaphore's). Throws as execute().
  virtual RawRows query(const std::string& sql, std::span<const Value> params) = 0;
  // The server's version string.
  virtual std::string server_version() = 0;
  // PostgreSQL: LISTENs on `channel` on this connection. Others throw std::runtime_error.
  virtual void listen(const std::string& channel);
  // Reads and discards the notifications this connection has received; with none yet, waits for
  // one at most `timeout`. True when at least one came. Others throw std::runtime_error.
  virtual bool notified(std::chrono::milliseconds timeout);
};

std::unique_ptr<RawClient> connect_raw_postgresql(const DatabaseUrl& url);
std::unique_ptr<RawClient> connect_raw_mysql(const DatabaseUrl& url);
std::unique_ptr<RawClient> connect_raw(const DatabaseUrl& url);

// The client libraries' versions, for the report.
std::string libpq_version();
std::string mysql_client_version();

}  // namespace dblock::bench
