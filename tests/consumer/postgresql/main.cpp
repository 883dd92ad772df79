// SPDX-License-Identifier: Apache-2.0
// A PostgreSQL-only service: it links dblock::postgresql and dblock::cleaner and nothing of
// MySQL, SOCI or libpqxx, and opens connections from URLs through open_pool()/open_connection().
// Exits 0 when:
//   - the libpq driver registered itself with core (also in a static link, through its -u
//     anchor): a postgresql:// URL is opened by libpq (port 1: nothing listens, kConnectFailed);
//   - a mysql:// URL is refused with an error naming the library to link (dblock::mysql);
//   - ?driver=libpqxx names dblock::libpqxx, which is not linked either;
//   - the cleaner is linked (dblock::clean).
#include <dblock/cleaner.hpp>
#include <dblock/error.hpp>
#include <dblock/open.hpp>
#include <dblock/url.hpp>
#include <dblock/version.hpp>
#include <iostream>
#include <string>

namespace {

// The error open_connection() throws for `url`, or "" when it throws none.
dblock::Error open_error(const std::string& url) {
  try {
    dblock::open_connection(dblock::DatabaseUrl::parse(url));
  } catch (const dblock::Error& e) {
    return e;
  }
  return dblock::Error(dblock::ErrorCode::kOther, "no error");
}

bool expect(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAILED: ") << what << "\n";
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  std::cout << "dblock " << dblock::library_version() << " (headers " << DBLOCK_VERSION_STRING
            << ")\n";
  ok &= expect(dblock::library_version() == DBLOCK_VERSION_STRING, "library version = headers");

  const auto pg = dblock::available_drivers(dblock::Dialect::kPostgreSQL);
  ok &= expect(pg.size() == 1 && pg.front() == "libpq", "PostgreSQL drivers linked: libpq only");
  ok &=
      expect(dblock::available_drivers(dblock::Dialect::kMySQL).empty(), "no MySQL driver linked");

  const dblock::Error refused = open_error("postgresql://app:secret@127.0.0.1:1/app");
  std::cout << "  " << refused.what() << "\n";
  ok &= expect(refused.code() == dblock::ErrorCode::kConnectFailed,
               "postgresql:// goes to libpq (connect failed on port 1)");

  const dblock::Error mysql = open_error("mysql://app:secret@127.0.0.1:1/app");
  std::cout << "  " << mysql.what() << "\n";
  ok &= expect(mysql.code() == dblock::ErrorCode::kInvalidArgument &&
                   std::string(mysql.what()).find("dblock::mysql") != std::string::npos,
               "mysql:// names dblock::mysql");

  const dblock::Error pqxx = open_error("postgresql://app:secret@127.0.0.1:1/app?driver=libpqxx");
  std::cout << "  " << pqxx.what() << "\n";
  ok &= expect(std::string(pqxx.what()).find("link dblock::libpqxx") != std::string::npos,
               "?driver=libpqxx names dblock::libpqxx");

  auto* clean = &dblock::clean;  // the cleaner library is linked
  ok &= expect(clean != nullptr, "dblock::clean linked");
  return ok ? 0 : 1;
}
