// SPDX-License-Identifier: Apache-2.0
#include "release_command.hpp"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "dblock/lock_table.hpp"

namespace dblock::cli {

namespace {

constexpr const char* kReleaseFooter =
    R"(Frees the lock KEY as its holder's release would: the next acquire gets it at once, with a
higher fencing token. The holder finds its lease lost at its next renewal (`dblock run` then
stops its command: SIGTERM at once, SIGKILL --kill-after later, and exits 75); until then it may
still be running, so a forced release can let two holders overlap for that long.

Without --force, only a lease that has expired is released, and only when the owner options
given match its holder. With --force, a live lease is released too; owner options, when given,
must still match.

A semaphore's permit (a key `dblock locks` lists under SEMAPHORE) is freed the same way; name it
with --permit N (N as in PERMIT N/LIMIT) when more than one is held.

Prints one line on stdout naming the key, its holder (host/process/thread), its lease id and
fencing token. Exit status: 0 released; 1 not held, or held by another owner; 75 live and not
--force, or changed while releasing (look again); 64 bad option, 69 database unreachable, 77
access denied, 78 tables missing.)";

struct ReleaseOptions {
  DatabaseOptions db;
  std::string key;
  bool force = false;
  std::optional<std::string> owner_host;
  std::optional<std::string> owner_process;
  std::optional<std::string> owner_thread;
  std::optional<int> permit;  // 1-based, as `dblock locks` shows it
};

std::string holder_of(const LockRow& row) {
  return row.owner_host + "/" + row.owner_process + "/" + row.owner_thread + " (lease " +
         row.lease_id + ", fencing token " + std::to_string(row.fencing_token) + ", " +
         (row.expired                 ? "expired at " + row.expires_at
          : row.expires_at == "never" ? "a claim, never expires"
                                      : "live until " + row.expires_at) +
         ")";
}

// True when every owner option given matches the row.
bool owner_matches(const ReleaseOptions& opts, const LockRow& row) {
  return (!opts.owner_host || *opts.owner_host == row.owner_host) &&
         (!opts.owner_process || *opts.owner_process == row.owner_process) &&
         (!opts.owner_thread || *opts.owner_thread == row.owner_thread);
}

// The permits of semaphore `opts.key` held now (or expired and not cleaned), narrowed to
// --permit and the owner options, and freed as release() frees a lock.
int release_permit(const ReleaseOptions& opts, Connection& conn, const TableNames& tables) {
  std::vector<PermitRow> found;
  bool any = false;
  for (auto& p : list_permits(conn, tables, opts.key)) {
    if (p.lock.key != opts.key) continue;
    any = true;
    if (opts.permit && p.slot + 1 != *opts.permit) continue;
    if (!owner_matches(opts, p.lock)) continue;
    found.push_back(std::move(p));
  }
  if (found.empty()) {
    std::cerr << "dblock: " << (any ? "no permit of semaphore " : "lock ") << opts.key
              << (any ? " matches the --permit and owner options given" : " is not held")
              << "; nothing released\n";
    return kExitFailure;
  }
  if (found.size() > 1) {
    std::cerr << "dblock: semaphore " << opts.key << " has " << found.size()
              << " permits held; name one with --permit N (as `dblock locks` shows PERMIT "
                 "N/LIMIT); nothing released\n";
    return kExitUsage;
  }
  const PermitRow& p = found.front();
  const std::string what = "permit " + std::to_string(p.slot + 1) + "/" +
                           std::to_string(p.permits) + " of semaphore " + opts.key;
  if (p.lock.expired) {
    std::printf("%s held by %s is free already; nothing to release\n", what.c_str(),
                holder_of(p.lock).c_str());
    return kExitOk;
  }
  if (!opts.force) {
    std::cerr << "dblock: " << what << " is held by " << holder_of(p.lock)
              << "; nothing released: pass --force to take it from its holder now\n";
    return kExitTempFail;
  }
  if (!release_permit_row(conn, tables, p)) {
    std::cerr << "dblock: " << what << " changed while releasing it; nothing released: "
              << "look again with `dblock locks --key-prefix " << opts.key << "`\n";
    return kExitTempFail;
  }
  std::printf("released %s held by %s (forced)\n", what.c_str(), holder_of(p.lock).c_str());
  return kExitOk;
}

int release(const ReleaseOptions& opts) {
  const bool owner_given = opts.owner_host || opts.owner_process || opts.owner_thread;
  if (!opts.force && !owner_given) {
    std::cerr << "dblock: name the holder of " << opts.key
              << " with --owner-host, --owner-process and/or --owner-thread (as `dblock locks` "
                 "shows them), or pass --force\n";
    return kExitUsage;
  }
  auto conn = opts.db.connect();
  const TableNames tables = opts.db.table_names();
  std::optional<LockRow> row;
  if (!opts.permit) {
    for (auto& r : list_locks(*conn, tables, opts.key)) {
      if (r.key == opts.key) row = std::move(r);
    }
  }
  if (!row) return release_permit(opts, *conn, tables);  // a semaphore's permit, if any
  if (owner_given && !owner_matches(opts, *row)) {
    std::cerr << "dblock: lock " << opts.key << " is held by " << holder_of(*row)
              << ", not by the owner given; nothing released\n";
    return kExitFailure;
  }
  if (!opts.force && !row->expired) {
    std::cerr << "dblock: lock " << opts.key << " is held by " << holder_of(*row)
              << "; nothing released: pass --force to take it from its holder now\n";
    return kExitTempFail;
  }
  if (!release_lock_row(*conn, tables, *row)) {
    std::cerr << "dblock: lock " << opts.key << " changed while releasing it; nothing released: "
              << "look again with `dblock locks --key-prefix " << opts.key << "`\n";
    return kExitTempFail;
  }
  std::printf("released lock %s held by %s%s\n", opts.key.c_str(), holder_of(*row).c_str(),
              opts.force ? " (forced)" : "");
  return kExitOk;
}

}  // namespace

void add_release_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<ReleaseOptions>();
  CLI::App* sub = app.add_subcommand(
      "release", "Free a stuck lock (an operator's release; prints what it released)");
  sub->add_option("--key", opts->key, "The lock to free")->type_name("KEY")->required();
  sub->add_flag("--force", opts->force,
                "Free it even while its lease is live (its holder loses it), and without naming "
                "the owner");
  sub->add_option("--owner-host", opts->owner_host, "Free it only if held from this host")
      ->type_name("HOST");
  sub->add_option("--owner-process", opts->owner_process,
                  "Free it only if held by this process instance")
      ->type_name("PROCESS");
  sub->add_option("--owner-thread", opts->owner_thread, "Free it only if held by this thread")
      ->type_name("THREAD");
  sub->add_option("--permit", opts->permit,
                  "For a semaphore: the permit to free, N as `dblock locks` shows PERMIT N/LIMIT")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  opts->db.add_to(*sub);
  sub->footer(kReleaseFooter);
  sub->callback([opts, exit_code] { *exit_code = run_guarded([&] { return release(*opts); }); });
}

}  // namespace dblock::cli
