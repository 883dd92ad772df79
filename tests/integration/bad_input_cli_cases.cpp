// SPDX-License-Identifier: Apache-2.0
// The CLI's rows of the bad-input table (bad_input.hpp): unknown commands and flags, bad
// durations, keys, URLs and names. Each must exit 64 (EX_USAGE) with one stderr line, run no
// command and touch no table.
#include "bad_input.hpp"

namespace dblock::testing {

namespace {

BadInputCase usage(std::string name, std::vector<std::string> args, std::string fragment,
                   bool with_prefix = true, std::map<std::string, std::string> env = {}) {
  std::string input = "dblock";
  for (const auto& a : args) input += " " + a;
  return {.name = std::move(name),
          .input = std::move(input),
          .cli = [args, with_prefix,
                  env](BadInputContext& ctx) { return ctx.cli(args, with_prefix, env); },
          .exit_code = 64,
          .expect = std::move(fragment)};
}

// `dblock run <options> -- true`: the command must never run.
std::vector<std::string> run_true(std::vector<std::string> options) {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"--", "true"});
  return args;
}

}  // namespace

std::vector<BadInputCase> cli_cases() {
  return {
      usage("CliUnknownSubcommand", {"frobnicate"}, "unknown subcommand 'frobnicate'", false),
      usage("CliNoSubcommand", {}, "see `dblock --help`", false),
      usage("CliUnknownFlag", {"locks", "--frobnicate"},
            "--frobnicate (see `dblock locks --help`)"),
      usage("CliMissingKey", run_true({}), "--key"),
      usage("CliEmptyKey", run_true({"--key", ""}), "the lock key is empty"),
      usage("CliKeyInvalidUtf8", run_true({"--key", "\xff"}), "not valid UTF-8"),
      usage("CliKeyOver255Characters", run_true({"--key", std::string(256, 'k')}),
            "the limit is 255"),
      usage("CliDurationFinerThanAMillisecond", run_true({"--key", "k", "--ttl", "1.5ms"}),
            "invalid duration '1.5ms' (finer than a millisecond)"),
      usage("CliZeroTtl", run_true({"--key", "k", "--ttl", "0"}),
            "--ttl must be from 1ms to 365 days"),
      usage("CliHugeTtl", run_true({"--key", "k", "--ttl", "99999999999h"}),
            "--ttl must be from 1ms to 365 days"),
      usage("CliUnknownUnit", run_true({"--key", "k", "--ttl", "5x"}),
            "--ttl: invalid duration '5x'"),
      usage("CliNegativeWait", run_true({"--key", "k", "--wait", "-1s"}),
            "--wait: invalid duration '-1s'"),
      usage("CliDurationWithoutUnit", {"clean", "--pause", "5"}, "invalid duration '5'"),
      usage("CliDurationWithSpaces", {"clean", "--grace", "5 minutes"}, "--grace"),
      usage("CliZeroBatch", {"clean", "--batch", "0"}, "--batch must be at least 1"),
      usage("CliNegativeBatch", {"clean", "--batch", "-1"},
            "--batch: must be a whole number, 0 or more; got '-1'"),
      usage("CliNegativeMaxRows", {"clean", "--max-rows", "-5"},
            "--max-rows: must be a whole number, 0 or more; got '-5'"),
      usage("CliNegativeHistoryRetention", {"clean", "--history-retention", "-1d"},
            "--history-retention: invalid duration '-1d'"),
      usage("CliHistoryWithoutKey", {"history"}, "history needs the KEY whose holds to list"),
      usage("CliHistoryUnknownFlag", {"history", "k", "--frobnicate"},
            "--frobnicate (see `dblock history --help`)"),
      usage("CliHistoryBadSince", {"history", "k", "--since", "5x"},
            "--since: invalid duration '5x'"),
      usage("CliHistoryNegativeSince", {"history", "k", "--since", "-1h"},
            "--since: invalid duration '-1h'"),
      usage("CliHistoryNegativeLimit", {"history", "k", "--limit", "-1"}, "--limit"),
      usage("CliIntervalWithoutLoop", {"clean", "--interval", "1s"}, "--interval requires --loop"),
      usage("CliWatchZeroInterval", {"locks", "--watch", "--interval", "0"},
            "--interval 0 is out of range: give 100ms to 1h"),
      usage("CliWatchTinyInterval", {"locks", "--watch", "--interval", "10ms"},
            "--interval 10ms is out of range: give 100ms to 1h"),
      usage("CliWatchHugeInterval", {"locks", "--watch", "--interval", "2h"},
            "--interval 2h is out of range: give 100ms to 1h"),
      usage("CliWatchNegativeInterval", {"locks", "--watch", "--interval", "-1s"},
            "--interval: invalid duration '-1s' (negative)"),
      usage("CliIntervalWithoutWatch", {"locks", "--interval", "1s"},
            "--interval requires --watch"),
      usage("CliWatchWithPrometheus", {"locks", "--watch", "--prometheus", "/tmp/x.prom"},
            "--watch and --prometheus do not go together"),
      usage("CliWatchNoUrl", {"locks", "--watch"}, "pass --url or set DBLOCK_URL", true,
            {{"DBLOCK_URL", ""}}),
      usage("CliNoUrl", {"locks"}, "pass --url or set DBLOCK_URL", true, {{"DBLOCK_URL", ""}}),
      usage("CliMalformedUrl", {"locks", "--url", "localhost/db"}, "missing '://'"),
      usage("CliUnsupportedScheme", {"locks", "--url", "redis://h/db"}, "unsupported scheme"),
      {.name = "CliUrlWithABadPort",
       .input = "DBLOCK_URL=postgresql://u:<password>@host:notaport/db dblock migrate status",
       .cli =
           [](BadInputContext& ctx) {
             return ctx.cli(
                 {"migrate", "status"}, true,
                 {{"DBLOCK_URL", "postgresql://u:" + ctx.password + "@host:notaport/db"}});
           },
       .expect = "the port 'notaport' is not a number"},
      usage("CliUrlFileMissing", {"locks", "--url-file", "/nonexistent/dblock-url"},
            "/nonexistent/dblock-url"),
      usage("CliPrefixWithSql", {"locks", "--prefix", "x\"; DROP TABLE y; --"},
            "invalid table prefix", false),
      usage("CliSchemaWithQuote", {"migrate", "up", "--schema", "app'; --"}, "invalid schema name"),
      usage("CliDoctorPrefixWithSql", {"doctor", "--prefix", "x'; DROP TABLE y; --"},
            "invalid table prefix", false),
      usage("CliDoctorUnknownFlag", {"doctor", "--fix"}, "--fix (see `dblock doctor --help`)"),
  };
}

}  // namespace dblock::testing
