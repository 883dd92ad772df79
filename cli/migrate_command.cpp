// SPDX-License-Identifier: Apache-2.0
#include "migrate_command.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

#include "common.hpp"
#include "dblock/migrator.hpp"

namespace dblock::cli {

namespace {

struct MigrateOptions {
  DatabaseOptions db;
  std::string migrations_dir;

  Migrator migrator(Connection& conn) const {
    std::optional<std::vector<Migration>> files;
    if (!migrations_dir.empty()) files = load_migrations(migrations_dir);
    return Migrator(conn, db.table_names(), std::move(files));
  }
};

void print_states(const std::vector<MigrationState>& states) {
  std::printf("%-32s  %-8s  %s\n", "MIGRATION", "STATE", "APPLIED AT (UTC)");
  for (const auto& s : states) {
    std::printf("%-32s  %-8s  %s\n", s.id().c_str(), std::string(to_string(s.status)).c_str(),
                s.applied_at.empty() ? "-" : s.applied_at.c_str());
  }
}

}  // namespace

void add_migrate_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<MigrateOptions>();
  CLI::App* migrate = app.add_subcommand("migrate", "Create or upgrade dblock's tables");
  migrate->require_subcommand(1);

  auto add = [&](const char* name, const char* help, std::function<int(Migrator&)> action) {
    CLI::App* sub = migrate->add_subcommand(name, help);
    opts->db.add_to(*sub);
    sub->add_option("--migrations-dir", opts->migrations_dir,
                    "Use the NNNN_name.sql files in this directory instead of the migrations "
                    "built into dblock");
    sub->callback([opts, exit_code, action] {
      *exit_code = run_guarded([&] {
        auto conn = opts->db.connect();
        Migrator migrator = opts->migrator(*conn);
        return action(migrator);
      });
    });
  };

  add("up", "Apply pending migrations (safe to run from several hosts at once)", [](Migrator& m) {
    auto applied = m.up();
    if (applied.empty()) {
      std::printf("dblock schema is up to date\n");
    } else {
      for (const auto& s : applied) std::printf("applied %s\n", s.id().c_str());
    }
    return kExitOk;
  });
  add("status", "List migrations: applied, pending, modified or unknown", [](Migrator& m) {
    print_states(m.status());
    return kExitOk;
  });
  add("verify",
      "Exit 0 only if every migration is applied unchanged (for deploy checks); "
      "otherwise print what is wrong and exit 78",
      [](Migrator& m) {
        m.verify();
        std::printf("dblock schema verified: all migrations applied, checksums match\n");
        return kExitOk;
      });
}

}  // namespace dblock::cli
