// SPDX-License-Identifier: Apache-2.0
#include "version.hpp"

#include <algorithm>
#include <vector>

#include "dblock/open.hpp"
#include "dblock/version.hpp"

namespace dblock::cli {

std::string version_text() {
  // Each database's own drivers, then those that serve both (SOCI).
  const std::vector<std::string> pg = available_drivers(Dialect::kPostgreSQL);
  const std::vector<std::string> my = available_drivers(Dialect::kMySQL);
  auto in = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  std::vector<std::string> names;
  for (const std::string& name : pg) {
    if (!in(my, name)) names.push_back(name);
  }
  for (const std::string& name : my) {
    if (!in(pg, name)) names.push_back(name);
  }
  for (const std::string& name : pg) {
    if (in(my, name)) names.push_back(name);
  }
  std::string drivers;
  for (const std::string& name : names) {
    if (!drivers.empty()) drivers += ", ";
    drivers += name;
  }
  return "dblock " + std::string(library_version()) +
         " (drivers: " + (drivers.empty() ? "none" : drivers) + ")";
}

}  // namespace dblock::cli
