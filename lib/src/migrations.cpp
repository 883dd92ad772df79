// SPDX-License-Identifier: Apache-2.0
#include "migrations.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dblock/error.hpp"
#include "sha256.hpp"

namespace dblock {

namespace detail {

Migration parse_migration_file(std::string_view file_name, std::string text) {
  auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument,
                 "migration file '" + std::string(file_name) +
                     "' is misnamed: use NNNN_name.sql (four digits, '_', letters, digits, '_')");
  };
  if (file_name.size() < 10 || !file_name.ends_with(".sql") || file_name[4] != '_') throw bad();
  int version = 0;
  for (char c : file_name.substr(0, 4)) {
    if (c < '0' || c > '9') throw bad();
    version = version * 10 + (c - '0');
  }
  std::string_view name = file_name.substr(5, file_name.size() - 9);
  if (name.empty() || version == 0) throw bad();
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) throw bad();
  }
  return Migration{version, std::string(name), std::move(text)};
}

void sort_and_check(std::vector<Migration>& migrations) {
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (std::size_t i = 1; i < migrations.size(); ++i) {
    if (migrations[i].version == migrations[i - 1].version) {
      throw Error(ErrorCode::kInvalidArgument, "migrations " + migrations[i - 1].id() + " and " +
                                                   migrations[i].id() +
                                                   " share a version number; renumber one");
    }
  }
}

}  // namespace detail

std::string Migration::id() const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d", version);
  return std::string(buf) + "_" + name;
}

std::string Migration::checksum() const { return detail::sha256_hex(sql); }

std::vector<Migration> builtin_migrations(Dialect dialect) {
  std::string prefix = std::string(to_string(dialect)) + "/";
  std::vector<Migration> out;
  for (const auto& file : detail::embedded_migration_files()) {
    std::string_view path(file.path);
    if (!path.starts_with(prefix)) continue;
    out.push_back(detail::parse_migration_file(path.substr(prefix.size()), file.text));
  }
  detail::sort_and_check(out);
  return out;
}

std::vector<Migration> load_migrations(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    throw Error(ErrorCode::kInvalidArgument,
                "migrations directory '" + directory + "' does not exist or is not a directory");
  }
  std::vector<Migration> out;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".sql") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      throw Error(ErrorCode::kInvalidArgument, "cannot read " + entry.path().string());
    }
    out.push_back(detail::parse_migration_file(entry.path().filename().string(), text.str()));
  }
  detail::sort_and_check(out);
  return out;
}

}  // namespace dblock
