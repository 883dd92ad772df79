// SPDX-License-Identifier: Apache-2.0
#include "common.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include "dblock/error.hpp"
#include "dblock/open.hpp"
#include "dblock/url.hpp"

namespace dblock::cli {

void DatabaseOptions::add_to(CLI::App& app) {
  app.add_option("--url", url,
                 "Database URL, postgresql://user:pass@host:port/db or mysql://...; default: "
                 "$DBLOCK_URL. The password may come from DBLOCK_PASSWORD or "
                 "DBLOCK_PASSWORD_FILE instead, so it stays out of `ps`");
  app.add_option("--url-file", url_file, "Read the database URL from this file")
      ->check(CLI::ExistingFile);
  app.add_option("--prefix", prefix, "Table name prefix")->capture_default_str();
  app.add_option("--schema", schema,
                 "PostgreSQL schema or MySQL database holding the tables (default: the "
                 "connection's current one)");
}

TableNames DatabaseOptions::table_names() const { return TableNames(prefix, schema); }

DatabaseUrl DatabaseOptions::resolve_url() const {
  std::optional<std::string> text = url;
  if (!text && url_file) {
    std::ifstream in(*url_file);
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
    while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) {
      text->pop_back();
    }
  }
  return DatabaseUrl::resolve(text);
}

std::unique_ptr<Connection> DatabaseOptions::connect() const {
  return open_connection(resolve_url());
}

namespace {
int exit_code_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return kExitUsage;
    case ErrorCode::kConnectFailed:
    case ErrorCode::kConnectionLost:
      return kExitUnavailable;
    case ErrorCode::kAccessDenied:
      return kExitNoPerm;
    case ErrorCode::kUndefinedTable:
    case ErrorCode::kFailedPrecondition:
      return kExitConfig;
    case ErrorCode::kLockNotAvailable:
    case ErrorCode::kLockWaitTimeout:
    case ErrorCode::kDeadlock:
    case ErrorCode::kSerializationFailure:
    case ErrorCode::kPoolExhausted:
      return kExitTempFail;
    default:
      return kExitFailure;
  }
}
}  // namespace

CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return {};
        return "must be a whole number, 0 or more; got '" + text + "'";
      },
      "N");
}

int run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::cerr << "dblock: " << e.what() << '\n';
    return exit_code_for(e.code());
  } catch (const std::exception& e) {
    std::cerr << "dblock: " << e.what() << '\n';
    return kExitFailure;
  }
}

}  // namespace dblock::cli
