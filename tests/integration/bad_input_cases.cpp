// SPDX-License-Identifier: Apache-2.0
// The library's rows of the bad-input table (bad_input.hpp): keys, lock options, leases, table
// names, connections, migrations and lock sets.
#include <algorithm>
#include <thread>

#include "bad_input.hpp"
#include "bad_input_rows.hpp"
#include "dblock/cleaner.hpp"
#include "dblock/lock_set.hpp"
#include "dblock/lock_table.hpp"
#include "dblock/migrator.hpp"
#include "dblock/open.hpp"
#include "dblock/semaphore.hpp"
#include "dblock/unique_key_lock.hpp"

namespace dblock::testing {

using std::chrono::milliseconds;
using Code = ErrorCode;

LockOptions BadInputContext::as(const std::string& owner) {
  LockOptions o;
  o.owner = Owner::named(owner);
  o.ttl = std::chrono::minutes(5);
  o.auto_renew = false;
  return o;
}

ProcessResult BadInputContext::cli(std::vector<std::string> args, bool with_prefix,
                                   std::map<std::string, std::string> env) const {
  std::vector<std::string> argv{DBLOCK_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  if (with_prefix) {
    // Before a `--` that ends the options, if any.
    auto dashes = std::find(argv.begin(), argv.end(), "--");
    dashes = argv.insert(dashes, "--prefix");
    argv.insert(dashes + 1, tables.prefix());
  }
  env.try_emplace("DBLOCK_URL", url);
  env.try_emplace("DBLOCK_PASSWORD", "");
  return run_process(argv, env);
}

namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

UniqueKeyLock locks_of(BadInputContext& ctx) {
  return UniqueKeyLock(ctx.pool, {.tables = ctx.tables});
}

// The unique-key lock, whose rows' names carry no prefix: "EmptyKey".
LockUnderTest unique_key_lock() {
  return {"", "UniqueKeyLock", [](BadInputContext& ctx) {
            return std::make_unique<UniqueKeyLock>(ctx.pool,
                                                   UniqueKeyLockOptions{.tables = ctx.tables});
          }};
}

// A valid key that looks dangerous: taken as plain data, byte for byte.
BadInputCase odd_but_valid_key(std::string name, std::string key) {
  return {.name = std::move(name),
          .input = "try_acquire(" + shown(key) + ")",
          .act =
              [key](BadInputContext& ctx) {
                auto lease = locks_of(ctx).try_acquire(key, BadInputContext::as("a"));
                if (!lease) return std::string("not acquired");
                bool listed = false;
                for (const auto& r : list_locks(ctx.conn, ctx.tables)) listed |= r.key == key;
                bool same = lease->key() == key;
                lease->release();
                return std::string("acquired") +
                       (same && listed ? " and listed byte for byte" : " but the key changed");
              },
          .expect = "acquired and listed byte for byte",
          .touched_key = key};
}

BadInputCase bad_ttl(std::string name, milliseconds ttl) {
  return {.name = std::move(name),
          .input = "try_acquire with ttl " + std::to_string(ttl.count()) + " ms",
          .act =
              [ttl](BadInputContext& ctx) {
                LockOptions o = BadInputContext::as("a");
                o.ttl = ttl;
                return outcome(locks_of(ctx).try_acquire("k", o));
              },
          .code = Code::kInvalidArgument,
          .expect = "must be from 1 ms to 365 days"};
}

// A row whose input is the metadata given to try_acquire.
BadInputCase bad_metadata(std::string name, std::string text, std::string fragment) {
  return {.name = std::move(name),
          .input = "try_acquire with metadata " + shown(text),
          .act =
              [text](BadInputContext& ctx) {
                LockOptions o = BadInputContext::as("a");
                o.metadata = text;
                return outcome(locks_of(ctx).try_acquire("k", o));
              },
          .code = Code::kInvalidArgument,
          .expect = std::move(fragment)};
}

// Sets up a lease on "held" by owner "a".
void hold(BadInputContext& ctx) {
  auto lease = locks_of(ctx).try_acquire("held", BadInputContext::as("a"));
  if (!lease) throw std::runtime_error("setup: could not take 'held'");
  ctx.leases.push_back(std::move(*lease));
}

BadInputCase bad_renew(std::string name, milliseconds ttl) {
  return {.name = std::move(name),
          .input = "renew(" + std::to_string(ttl.count()) + " ms) of a held lease",
          .setup = hold,
          .act = [ttl](BadInputContext& ctx) { return std::to_string(ctx.leases[0].renew(ttl)); },
          .code = Code::kInvalidArgument,
          .expect = "must be from 1 ms to 365 days"};
}

BadInputCase bad_names(std::string name, std::string prefix, std::string schema,
                       std::string fragment) {
  return {.name = std::move(name),
          .input = "TableNames('" + prefix + "', '" + schema + "')",
          .act =
              [prefix, schema](BadInputContext& ctx) {
                TableNames names(prefix, schema);
                return outcome(UniqueKeyLock(ctx.pool, {.tables = names}).try_acquire("k"));
              },
          .code = Code::kInvalidArgument,
          .expect = std::move(fragment)};
}

}  // namespace

std::vector<BadInputCase> lock_key_cases() {
  const LockUnderTest uk = unique_key_lock();
  std::vector<BadInputCase> out = bad_key_rows(uk);
  std::vector<BadInputCase> more = {
      bad_key_row(uk, "KeyOver255MultibyteCharacters", repeat("\xc3\xa9", 256),  // é
                  "has 256 characters; the limit is 255"),
      bad_key_row(uk, "KeyWithNul", std::string("a\0b", 3), "NUL"),
      bad_key_row(uk, "KeyOverlongUtf8", "\xc0\xaf", "not valid UTF-8"),
      bad_key_row(uk, "KeyUtf16Surrogate", "\xed\xa0\x80", "not valid UTF-8"),
      bad_key_row(uk, "KeyTruncatedUtf8", "abc\xe2\x82", "not valid UTF-8"),
      odd_but_valid_key("KeyWithSqlIsData", "k'); DROP TABLE dblock_locks; --"),
      odd_but_valid_key("KeyWithQuotesIsData", "\\'\"`$1?%_"),
      odd_but_valid_key("Key255Characters", std::string(255, 'k')),
      odd_but_valid_key("KeyNonLatinIsData", "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87-\xf0\x9f\x94\x92"),
      odd_but_valid_key("Key255FourByteCharacters", repeat("\xf0\x9f\x94\x92", 255)),
      {.name = "ClaimEmptyKey",
       .input = "claim('')",
       .act =
           [](BadInputContext& ctx) { return std::to_string(locks_of(ctx).claim("").has_value()); },
       .code = Code::kInvalidArgument,
       .expect = "the lock key is empty"},
      {.name = "ClaimIdOver64Bytes",
       .input = "claim with a 65-byte claim id",
       .act =
           [](BadInputContext& ctx) {
             return std::to_string(
                 locks_of(ctx).claim("c", {.claim_id = std::string(65, 'i')}).has_value());
           },
       .code = Code::kInvalidArgument,
       .expect = "at most 64 bytes"},
  };
  for (auto& c : more) out.push_back(std::move(c));
  return out;
}

std::vector<BadInputCase> lock_option_cases() {
  return {
      bad_ttl("ZeroTtl", milliseconds(0)),
      bad_ttl("NegativeTtl", milliseconds(-5000)),
      bad_ttl("TtlOver365Days", std::chrono::hours(24 * 366)),
      bad_ttl("HugeTtl", milliseconds::max()),
      bad_metadata("MetadataNotJson", "job=nightly", "the lock metadata is not JSON"),
      bad_metadata("MetadataNulInString", R"({"job":"a\u0000b"})", "\\u0000 in a string"),
      bad_metadata("MetadataNestedTooDeep", std::string(32, '[') + std::string(32, ']'),
                   "more than 31 deep"),
      {.name = "MetadataNotJsonInATimedAcquire",
       .input = "acquire('k', 100 ms) with metadata 'nightly'",
       .act =
           [](BadInputContext& ctx) {
             LockOptions o = BadInputContext::as("a");
             o.metadata = "nightly";
             return outcome(locks_of(ctx).acquire("k", milliseconds(100), o));
           },
       .code = Code::kInvalidArgument,
       .expect = "the lock metadata is not JSON"},
      {.name = "ClaimMetadataNotJson",
       .input = "claim('c') with metadata 'nightly'",
       .act =
           [](BadInputContext& ctx) {
             return std::to_string(locks_of(ctx).claim("c", {.metadata = "nightly"}).has_value());
           },
       .code = Code::kInvalidArgument,
       .expect = "the lock metadata is not JSON"},
      {.name = "SemaphoreMetadataNotJson",
       .input = "Semaphore::try_acquire with metadata '{'",
       .act =
           [](BadInputContext& ctx) {
             LockOptions o = BadInputContext::as("a");
             o.metadata = "{";
             return outcome(Semaphore(ctx.pool, 3, {.tables = ctx.tables}).try_acquire("k", o));
           },
       .code = Code::kInvalidArgument,
       .expect = "the lock metadata is not JSON"},
      negative_timeout_row(unique_key_lock()),
      {.name = "ZeroTimeoutOnAHeldKeyIsOneTry",
       .input = "acquire('held', 0 ms) by another owner",
       .setup = hold,
       .act =
           [](BadInputContext& ctx) {
             return outcome(
                 locks_of(ctx).acquire("held", milliseconds(0), BadInputContext::as("b")));
           },
       .expect = "not acquired"},
      {.name = "HugeTimeoutOnAFreeKeyReturnsAtOnce",
       .input = "acquire('free', max ms)",
       .act =
           [](BadInputContext& ctx) {
             auto lease =
                 locks_of(ctx).acquire("free", milliseconds::max(), BadInputContext::as("a"));
             return outcome(lease);
           },
       .expect = "acquired",
       .touched_key = "free"},
      {.name = "ClaimOfAHeldKey",
       .input = "claim('held') while a lease holds it",
       .setup = hold,
       .act =
           [](BadInputContext& ctx) {
             return std::string(locks_of(ctx).claim("held") ? "claimed" : "not claimed");
           },
       .expect = "not claimed"},
      {.name = "LockOfAClaimedKey",
       .input = "try_acquire('claimed') after claim('claimed')",
       .setup = [](BadInputContext& ctx) { locks_of(ctx).claim("claimed"); },
       .act =
           [](BadInputContext& ctx) {
             return outcome(locks_of(ctx).try_acquire("claimed", BadInputContext::as("a")));
           },
       .expect = "not acquired"},
      {.name = "EmptyOwnerName",
       .input = "Owner::named('')",
       .act = [](BadInputContext&) { return Owner::named("").to_string(); },
       .code = Code::kInvalidArgument,
       .expect = "an owner name must be 1 to 200 bytes"},
      {.name = "OwnerNameOver200Bytes",
       .input = "Owner::named(201 bytes)",
       .act = [](BadInputContext&) { return Owner::named(std::string(201, 'o')).to_string(); },
       .code = Code::kInvalidArgument,
       .expect = "an owner name must be 1 to 200 bytes"},
      {.name = "CleanerGraceOver100Years",
       .input = "clean() with a grace of 101 years",
       .act =
           [](BadInputContext& ctx) {
             CleanOptions o;
             o.grace = std::chrono::hours(24 * 366 * 101);
             return std::to_string(clean(ctx.conn, ctx.tables, o).deleted);
           },
       .code = Code::kInvalidArgument,
       .expect = "at most 100 years"},
  };
}

std::vector<BadInputCase> lease_cases() {
  return {
      bad_renew("RenewWithZeroTtl", milliseconds(0)),
      bad_renew("RenewWithNegativeTtl", milliseconds(-1000)),
      double_release_row(unique_key_lock()),
      {.name = "ReleaseAfterMove",
       .input = "release() of a moved-from lease",
       .setup = hold,
       .act =
           [](BadInputContext& ctx) {
             ctx.leases.push_back(std::move(ctx.leases[0]));  // the new handle keeps holding
             return std::string(to_string(ctx.leases[0].release()));
           },
       .code = Code::kInvalidArgument,
       .expect = "this lease handle is empty"},
      {.name = "FencingTokenAfterRelease",
       .input = "fencing_token() of a released lease",
       .setup =
           [](BadInputContext& ctx) {
             hold(ctx);
             ctx.leases[0].release();
           },
       .act = [](BadInputContext& ctx) { return std::to_string(ctx.leases[0].fencing_token()); },
       .code = Code::kInvalidArgument,
       .expect = "this lease handle is empty"},
      {.name = "UseAfterTheConnectionClosed",
       .input = "try_acquire on a borrowed connection whose session was killed",
       .setup =
           [](BadInputContext& ctx) {
             ctx.spare = ctx.backend.connect();
             ctx.backend.kill_session(ctx.conn, ctx.backend.session_id(*ctx.spare));
             std::this_thread::sleep_for(milliseconds(100));  // the kill lands
           },
       .act =
           [](BadInputContext& ctx) {
             auto source = borrow(*ctx.spare);
             UniqueKeyLock locks(*source, {.tables = ctx.tables});
             return outcome(locks.try_acquire("k", BadInputContext::as("a")));
           },
       .code = Code::kConnectionLost,
       .expect = "the connection is broken; open a new one"},
  };
}

std::vector<BadInputCase> table_name_cases() {
  return {
      bad_names("PrefixWithSql", "x\"; DROP TABLE y; --", "", "invalid table prefix"),
      bad_names("PrefixWithBacktick", "a`b", "", "invalid table prefix"),
      bad_names("PrefixStartingWithADigit", "1x_", "", "not starting with a digit"),
      bad_names("PrefixNonAscii", "d\xc3\xa9_", "", "invalid table prefix 'd\\xc3\\xa9_'"),
      bad_names("SchemaWithQuote", "dblock_", "app'; --", "invalid schema name"),
      bad_names("SchemaOver63Characters", "dblock_", std::string(64, 's'), "1 to 63"),
      bad_names("PrefixTooLongForTheTableName", std::string(60, 'p'), "", "invalid table name"),
      {.name = "MissingTables",
       .input = "try_acquire with a prefix that was never migrated",
       .act =
           [](BadInputContext& ctx) {
             TableNames names(unique_name("none") + "_");
             return outcome(UniqueKeyLock(ctx.pool, {.tables = names}).try_acquire("k"));
           },
       .code = Code::kUndefinedTable,
       .expect = "run `dblock migrate up`"},
      {.name = "MissingTablesWhenListing",
       .input = "list_locks with a prefix that was never migrated",
       .act =
           [](BadInputContext& ctx) {
             return std::to_string(
                 list_locks(ctx.conn, TableNames(unique_name("none") + "_")).size());
           },
       .code = Code::kUndefinedTable,
       .expect = "run `dblock migrate up`"},
      {.name = "UnknownSchema",
       .input = "try_acquire in a schema that does not exist",
       .act =
           [](BadInputContext& ctx) {
             TableNames names(ctx.tables.prefix(), unique_name("noschema"));
             return outcome(UniqueKeyLock(ctx.pool, {.tables = names}).try_acquire("k"));
           },
       .code = Code::kUndefinedTable,
       .expect = "run `dblock migrate up`"},
  };
}

std::vector<BadInputCase> connection_cases() {
  auto open_with = [](std::function<void(DatabaseUrl&)> edit) {
    return [edit](BadInputContext& ctx) {
      DatabaseUrl url = ctx.backend.url();
      edit(url);
      return open_connection(url)->describe();
    };
  };
  return {
      {.name = "WrongPassword",
       .input = "a wrong password",
       .act = open_with([](DatabaseUrl& u) { u.password = "Wr0ng-Secret-bad-input"; }),
       .code = Code::kAccessDenied,
       .expect = "password",
       .secret = "Wr0ng-Secret-bad-input"},
      {.name = "UnknownDatabase",
       .input = "a database that does not exist",
       .act = open_with([](DatabaseUrl& u) { u.database = "nodb_bad_input"; }),
       .code = Code::kConnectFailed,
       .expect = "nodb_bad_input"},
      {.name = "UnknownDriver",
       .input = "?driver=odbc",
       .act = open_with([](DatabaseUrl& u) { u.driver = "odbc"; }),
       .code = Code::kInvalidArgument,
       .expect = "driver 'odbc' is not available"},
      {.name = "UrlUnknownParameter",
       .input = "?colour=blue (no driver knows it)",
       .act = open_with([](DatabaseUrl& u) { u.params.emplace_back("colour", "blue"); }),
       .code = Code::kInvalidArgument,
       .expect = "\"colour\""},
      {.name = "PoolOfSizeZero",
       .input = "open_pool with max_size 0",
       .act =
           [](BadInputContext& ctx) {
             return open_pool(ctx.backend.url(), {.max_size = 0})->describe();
           },
       .code = Code::kInvalidArgument,
       .expect = "max_size must be at least 1"},
      {.name = "UrlWithPasswordParameter",
       .input = "?password= in the URL",
       .act =
           [](BadInputContext& ctx) {
             std::string scheme =
                 ctx.backend.dialect == Dialect::kPostgreSQL ? "postgresql" : "mysql";
             return DatabaseUrl::parse(scheme + "://u@h/db?password=" + ctx.password).redacted();
           },
       .code = Code::kInvalidArgument,
       .expect = "DBLOCK_PASSWORD"},
  };
}

namespace {
// Records a different checksum for the applied migration 0001, as if its text had been edited.
void tamper_checksum(BadInputContext& ctx) {
  ctx.conn.execute("UPDATE " + ctx.tables.qualified(ctx.backend.dialect, "schema_migrations") +
                       " SET checksum = " + ctx.backend.param(1) + " WHERE version = 1",
                   {Value(std::string(64, '0'))});
}
}  // namespace

std::vector<BadInputCase> migration_cases() {
  return {
      {.name = "ChecksumDriftOfAnAppliedMigration",
       .input = "up() after the recorded checksum of 0001 changed",
       .setup = tamper_checksum,
       .act =
           [](BadInputContext& ctx) {
             return std::to_string(Migrator(ctx.conn, ctx.tables).up().size());
           },
       .code = Code::kFailedPrecondition,
       .expect = "0001_create_locks"},
      {.name = "VerifyAfterChecksumDrift",
       .input = "verify() after the recorded checksum of 0001 changed",
       .setup = tamper_checksum,
       .act =
           [](BadInputContext& ctx) {
             Migrator(ctx.conn, ctx.tables).verify();
             return std::string("verified");
           },
       .code = Code::kFailedPrecondition,
       .expect = "0001_create_locks"},
  };
}

}  // namespace dblock::testing

namespace dblock::testing {

namespace {
std::string set_outcome(const std::optional<LeaseSet>& set) {
  return set ? "acquired" : "not acquired";
}
}  // namespace

std::vector<BadInputCase> lock_set_cases() {
  return {
      {.name = "LockSetEmpty",
       .input = "try_acquire_all({})",
       .act =
           [](BadInputContext& ctx) {
             auto locks = locks_of(ctx);
             return set_outcome(try_acquire_all(locks, std::vector<std::string>{}));
           },
       .code = Code::kInvalidArgument,
       .expect = "at least one key"},
      // Every key is checked before the first is taken: "a" (taken first, in key order) must
      // not be left behind.
      {.name = "LockSetWithAnOverlongKeyTakesNothing",
       .input = "try_acquire_all({'a', 'zzz…' (256 characters)})",
       .act =
           [](BadInputContext& ctx) {
             auto locks = locks_of(ctx);
             return set_outcome(
                 try_acquire_all(locks, std::vector<std::string>{"a", std::string(256, 'z')},
                                 BadInputContext::as("a")));
           },
       .code = Code::kInvalidArgument,
       .expect = "the limit is 255"},
      {.name = "LockSetNegativeTimeout",
       .input = "acquire_all({'a'}, -1 ms)",
       .act =
           [](BadInputContext& ctx) {
             auto locks = locks_of(ctx);
             return set_outcome(acquire_all(locks, std::vector<std::string>{"a"}, milliseconds(-1),
                                            BadInputContext::as("a")));
           },
       .code = Code::kInvalidArgument,
       .expect = "use 0 for a single try"},
      // All or nothing: "a" is free, "held" is not; the set gets nothing and leaves "a" alone.
      {.name = "LockSetWithAHeldKeyIsNotAcquired",
       .input = "try_acquire_all({'a', 'held'}) by another owner",
       .setup = hold,
       .act =
           [](BadInputContext& ctx) {
             auto locks = locks_of(ctx);
             return set_outcome(try_acquire_all(locks, std::vector<std::string>{"a", "held"},
                                                BadInputContext::as("b")));
           },
       .expect = "not acquired",
       .touched_key = "a"},
      {.name = "LockSetLeaseOfAKeyNotInTheSet",
       .input = "lease('b') of a set of {'a'}",
       .act =
           [](BadInputContext& ctx) {
             auto locks = locks_of(ctx);
             auto set =
                 try_acquire_all(locks, std::vector<std::string>{"a"}, BadInputContext::as("a"));
             if (!set) return std::string("not acquired");
             return std::to_string(set->lease("b").fencing_token());
           },
       .code = Code::kInvalidArgument,
       .expect = "does not hold 'b'",
       .touched_key = "a"},
  };
}

}  // namespace dblock::testing
