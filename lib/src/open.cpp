#include "dblock/open.hpp"

#include "dblock/error.hpp"
#ifdef DBLOCK_HAVE_LIBPQXX
#include "dblock/libpq.hpp"
#include "dblock/libpqxx.hpp"
#endif
#ifdef DBLOCK_HAVE_MYSQL
#include "dblock/libmysqlclient.hpp"
#endif
#ifdef DBLOCK_HAVE_SOCI
#include "dblock/soci.hpp"
#endif

namespace dblock {

std::vector<std::string> available_drivers(Dialect dialect) {
  std::vector<std::string> out;
  (void)dialect;  // unused when no dialect-specific driver is built
#ifdef DBLOCK_HAVE_LIBPQXX
  if (dialect == Dialect::kPostgreSQL) {
    out.emplace_back("libpq");
    out.emplace_back("libpqxx");
  }
#endif
#ifdef DBLOCK_HAVE_MYSQL
  if (dialect == Dialect::kMySQL) out.emplace_back("libmysqlclient");
#endif
#ifdef DBLOCK_HAVE_SOCI
  out.emplace_back("soci");
#endif
  return out;
}

std::unique_ptr<Connection> open_connection(const DatabaseUrl& url) {
  auto drivers = available_drivers(url.dialect);
  std::string driver = url.driver;
  if (driver.empty()) {
    if (drivers.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "this dblock was built without a " + std::string(to_string(url.dialect)) +
                      " driver; rebuild with libpqxx, libmysqlclient or SOCI installed");
    }
    driver = drivers.front();
  }
#ifdef DBLOCK_HAVE_LIBPQXX
  if (driver == "libpq" && url.dialect == Dialect::kPostgreSQL) return connect_libpq(url);
  if (driver == "libpqxx" && url.dialect == Dialect::kPostgreSQL) return connect_pqxx(url);
#endif
#ifdef DBLOCK_HAVE_MYSQL
  if (driver == "libmysqlclient" && url.dialect == Dialect::kMySQL) return connect_mysql(url);
#endif
#ifdef DBLOCK_HAVE_SOCI
  if (driver == "soci") return connect_soci(url);
#endif
  std::string known;
  for (const auto& d : drivers) known += (known.empty() ? "" : ", ") + d;
  throw Error(ErrorCode::kInvalidArgument,
              "driver '" + driver + "' is not available for " +
                  std::string(to_string(url.dialect)) +
                  " URLs; available: " + (known.empty() ? std::string("none") : known));
}

std::unique_ptr<Pool> open_pool(const DatabaseUrl& url, PoolOptions options) {
  if (url.transaction_pooler) options.dedicated_sessions = false;
  return std::make_unique<Pool>(
      url.dialect, [url] { return open_connection(url); }, options);
}

}  // namespace dblock
