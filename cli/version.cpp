#include "version.hpp"

namespace dblock::cli {

std::string version_text() {
  std::string drivers;
  for (const char* name :
       {DBLOCK_CLI_DRIVER_LIBPQXX ? "libpqxx" : "", DBLOCK_CLI_DRIVER_MYSQL ? "libmysqlclient" : "",
        DBLOCK_CLI_DRIVER_SOCI ? "soci" : ""}) {
    if (*name == '\0') continue;
    if (!drivers.empty()) drivers += ", ";
    drivers += name;
  }
  return std::string("dblock ") + DBLOCK_CLI_VERSION +
         " (drivers: " + (drivers.empty() ? "none" : drivers) + ")";
}

}  // namespace dblock::cli
