// SPDX-License-Identifier: Apache-2.0
// The parts every TTL lock kind shares: purpose and thread-safety in ttl_lease.hpp.
#include "ttl_lease.hpp"

#include <utility>

#include "metadata.hpp"
#include "renewer.hpp"

namespace dblock::detail {

LeaseInfo new_ttl_lease(std::string_view key, const LockOptions& options,
                        std::string_view ttl_what) {
  validate_lock_key(key);
  validate_ttl(options.ttl, ttl_what);
  validate_metadata(options.metadata);
  validate_min_hold(options.min_hold);
  validate_lock_delay(options.lock_delay);
  validate_stop_rules(options.stop_margin, options.ttl, static_cast<bool>(options.renew_if),
                      options.auto_renew);
  return {std::string(key),    0,
          random_lease_id(),   options.owner ? *options.owner : Owner::current_thread(),
          options.ttl,         options.lock_delay,
          options.stop_margin, options.renew_if};
}

std::vector<Arg> owner_args(const Owner& owner, std::initializer_list<Arg> rest) {
  std::vector<Arg> args;
  args.reserve(3 + rest.size());
  args.push_back({"host", Value(owner.host)});
  args.push_back({"process", Value(owner.process)});
  args.push_back({"thread", Value(owner.thread)});
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::optional<std::int64_t> returned_id(const Result& r, bool rows, std::string_view column) {
  if (rows) {
    if (r.empty()) return std::nullopt;
    return r.int64_at(0, column);
  }
  if (r.last_insert_id() == 0) return std::nullopt;
  return static_cast<std::int64_t>(r.last_insert_id());
}

Error kept_contending(const std::string& what, std::string_view then) {
  return Error(ErrorCode::kLockWaitTimeout, what + " kept contending; " + std::string(then));
}

Error fence_lease_lost(const std::string& key) {
  return Error(ErrorCode::kLeaseLost,
               "the lease on '" + key +
                   "' is no longer held (it expired, was taken over or released): roll this "
                   "transaction back, since another owner may hold the key");
}

void check_fence_connection(Connection& conn, Dialect dialect, GaleraCheck& galera) {
  if (conn.dialect() != dialect) {
    throw Error(ErrorCode::kInvalidArgument,
                "fence() got a connection to " + std::string(to_string(conn.server())) +
                    ", and the lock's table is on " + std::string(to_string(dialect)) +
                    ": fence through a connection to the lock's own database");
  }
  galera.refuse_on_galera(
      conn,
      "fence() cannot protect a transaction on a Galera cluster: a share lock on one node holds "
      "back no takeover committed on another; check the fencing token in the write instead "
      "(docs/locks/fencing.md)");
}

Lease start_lease(std::shared_ptr<LeaseCore> core, BootClock::time_point sent,
                  const LockOptions& options) {
  core->note_renewed(sent, options.ttl);  // lost() counts the TTL from here
  if (options.auto_renew) Renewer::instance().watch(core, sent);
  return Lease(std::move(core));
}

}  // namespace dblock::detail
