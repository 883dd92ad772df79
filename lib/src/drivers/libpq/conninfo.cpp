// The libpq connection string for a URL (see conninfo.hpp).
#include "drivers/libpq/conninfo.hpp"

#include "driver_support.hpp"

namespace dblock::libpq_driver {
namespace {

Error invalid_url(std::string_view where, const std::string& message) {
  return detail::driver_error(ErrorCode::kInvalidArgument, where, message, {});
}

}  // namespace

std::string conninfo(const DatabaseUrl& url, std::string_view where, std::string_view driver) {
  if (url.dialect != Dialect::kPostgreSQL) {
    throw invalid_url(where, "the " + std::string(driver) + " driver needs a postgresql:// URL");
  }
  std::string out;
  if (!url.host.empty()) detail::append_quoted_option(out, "host", url.host);
  detail::append_quoted_option(out, "port", std::to_string(url.effective_port()));
  if (!url.user.empty()) detail::append_quoted_option(out, "user", url.user);
  if (!url.password.empty()) detail::append_quoted_option(out, "password", url.password);
  if (!url.database.empty()) detail::append_quoted_option(out, "dbname", url.database);
  if (!url.param("connect_timeout")) detail::append_quoted_option(out, "connect_timeout", "10");
  detail::append_quoted_option(out, "fallback_application_name", "dblock");
  for (const auto& [key, value] : url.params) {
    if (!detail::is_option_keyword(key)) {
      throw invalid_url(where, "URL parameter \"" + key + "\" is not a libpq connection keyword");
    }
    detail::append_quoted_option(out, key, value);
  }
  return out;
}

}  // namespace dblock::libpq_driver
