// SPDX-License-Identifier: Apache-2.0
// dblock-bench: measures dblock against raw client loops on PostgreSQL and MySQL/MariaDB and
// prints a table (ratios first); --json writes every figure, --svg the chart, --markdown the
// results section of docs/benchmarks.md. Databases come from
// --pg-url / --mysql-url or DBLOCK_BENCH_PG_URL / DBLOCK_BENCH_MYSQL_URL (scripts/bench.sh starts
// throwaway servers and sets them). Scenarios live in scenarios/, one file each.
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "bench.hpp"
#include "dblock/error.hpp"
#include "markdown.hpp"
#include "raw_client.hpp"
#include "report.hpp"

namespace dblock::bench {
namespace {

std::string first_line_of(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      auto colon = line.find(':');
      std::string v = colon == std::string::npos ? line : line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "";
}

nlohmann::json machine() {
  utsname u{};
  uname(&u);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {{"hostname", host},
          {"kernel", std::string(u.sysname) + " " + u.release},
          {"arch", u.machine},
          {"cpus", std::thread::hardware_concurrency()},
          {"cpu_model", first_line_of("/proc/cpuinfo", "model name")},
          {"memory", first_line_of("/proc/meminfo", "MemTotal")},
          {"load_average_at_start", first_line_of("/proc/loadavg", "")}};
}

// The server settings that decide what the figures mean: commit flushing and cache sizes.
nlohmann::json server_settings(const Target& target) {
  auto client = connect_raw(target.url);
  nlohmann::json out;
  auto read = [&](const char* name, const std::string& sql) {
    out[name] = client->execute(sql).first;
  };
  if (target.dialect() == Dialect::kPostgreSQL) {
    read("synchronous_commit_on", "SELECT (current_setting('synchronous_commit') = 'on')::int");
    read("fsync_on", "SELECT (current_setting('fsync') = 'on')::int");
    read("shared_buffers_mb", "SELECT pg_size_bytes(current_setting('shared_buffers')) >> 20");
    read("max_wal_size_mb", "SELECT pg_size_bytes(current_setting('max_wal_size')) >> 20");
  } else {
    read("innodb_flush_log_at_trx_commit", "SELECT @@innodb_flush_log_at_trx_commit");
    read("innodb_buffer_pool_size_mb", "SELECT @@innodb_buffer_pool_size >> 20");
    read("innodb_log_file_size_mb", "SELECT @@innodb_log_file_size >> 20");
  }
  return out;
}

// Now, in UTC: "2026-11-26 10:12 UTC".
std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// Replaces the results section of the Markdown page `path` (docs/benchmarks.md) with this run's,
// through a temporary file in the same directory, so a failed write leaves the page as it was.
void write_markdown(const std::string& path, const std::string& results) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + " (--markdown)");
  std::ostringstream page;
  page << in.rdbuf();
  std::string updated = replace_results(page.str(), results);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << updated;
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

int run(int argc, char** argv) {
  CLI::App app{"dblock-bench: dblock against raw client loops on PostgreSQL and MySQL/MariaDB"};
  std::string pg_url = env("DBLOCK_BENCH_PG_URL").value_or("");
  std::string mysql_url = env("DBLOCK_BENCH_MYSQL_URL").value_or("");
  std::string json_path, svg_path, markdown_path, command, only;
  Settings settings;
  long duration_ms = 0;
  app.add_option("--pg-url", pg_url, "PostgreSQL URL (default $DBLOCK_BENCH_PG_URL)");
  app.add_option("--mysql-url", mysql_url, "MySQL/MariaDB URL (default $DBLOCK_BENCH_MYSQL_URL)");
  app.add_option("--json", json_path, "write every figure, the machine and settings here");
  app.add_option("--svg", svg_path, "write the chart (SVG) here");
  app.add_option("--markdown", markdown_path,
                 "replace the results section of this Markdown page (docs/benchmarks.md) with "
                 "this run's");
  app.add_option("--command", command,
                 "how the run was started, as the Markdown results say (default: this "
                 "program's arguments)");
  app.add_flag("--quick", settings.quick,
               "short run: fewer rounds and points, 100k rows instead of 10M (not for reports)");
  app.add_option("--only", only, "run only the scenarios whose name matches this regex");
  app.add_option("--duration-ms", duration_ms, "measured time per point (default 1000, quick 500)");
  app.add_option("--rounds", settings.rounds,
                 "pairs of raw/dblock rounds per comparison (default 16, quick 2)")
      ->check(CLI::PositiveNumber);
  long round_ms = 0;
  app.add_option("--round-ms", round_ms,
                 "measured time per side of a pair (default 150, quick 250)");
  std::vector<std::int64_t> table_rows;
  app.add_option("--table-rows", table_rows,
                 "lock-table sizes for table_size (default 1000 1000000 10000000)")
      ->delimiter(',');
  std::int64_t cleaner_rows = 0;
  app.add_option("--cleaner-rows", cleaner_rows, "expired rows for the cleaner (default 200000)");
  CLI11_PARSE(app, argc, argv);
  if (command.empty()) {
    command = "dblock-bench";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  }
  if (!markdown_path.empty()) {
    // A page without its results section fails now, not after a run of ten minutes.
    std::ifstream in(markdown_path);
    std::ostringstream page;
    page << in.rdbuf();
    if (!in) throw std::runtime_error("cannot read " + markdown_path + " (--markdown)");
    replace_results(page.str(), "");
  }
  // The command goes into a page people read: a URL's password never does.
  command = std::regex_replace(command, std::regex(R"((://[^:/@\s]*:)[^@\s]*@)"), "$1***@");

  if (settings.quick) {
    settings.duration = std::chrono::milliseconds(500);
    settings.rounds = std::min(settings.rounds, 2);
    settings.round_duration = std::chrono::milliseconds(250);
    settings.connections = {1, 8};
    settings.hot_clients = {8, 64};
    settings.table_rows = {1'000, 100'000};
    settings.cleaner_rows = 50'000;
  }
  if (duration_ms > 0) settings.duration = std::chrono::milliseconds(duration_ms);
  if (round_ms > 0) settings.round_duration = std::chrono::milliseconds(round_ms);
  if (!table_rows.empty()) settings.table_rows = table_rows;
  if (cleaner_rows > 0) settings.cleaner_rows = cleaner_rows;

  std::vector<Target> targets;
  if (!pg_url.empty()) targets.push_back({"postgresql", DatabaseUrl::parse(pg_url)});
  if (!mysql_url.empty()) targets.push_back({"mysql", DatabaseUrl::parse(mysql_url)});
  if (targets.empty()) {
    std::cerr << "dblock-bench: no database given; pass --pg-url and/or --mysql-url (or run "
                 "scripts/bench.sh, which starts throwaway servers)\n";
    return 64;
  }

  nlohmann::json document;
  document["started_at"] = utc_now();
  document["machine"] = machine();
  document["versions"] = {{"dblock", DBLOCK_BENCH_VERSION},
                          {"build_type", DBLOCK_BENCH_BUILD_TYPE},
                          {"compiler", __VERSION__},
                          {"libpq", libpq_version()},
                          {"mysql_client", mysql_client_version()}};
  document["settings"] = {{"quick", settings.quick},
                          {"duration_ms", settings.duration.count()},
                          {"rounds", settings.rounds},
                          {"round_ms", settings.round_duration.count()},
                          {"connections", settings.connections},
                          {"hot_key_clients", settings.hot_clients},
                          {"table_rows", settings.table_rows},
                          {"cleaner_rows", settings.cleaner_rows}};
  std::vector<Headline> headlines;
  const std::regex filter(only.empty() ? ".*" : only);
  const auto started = std::chrono::steady_clock::now();
  for (const Target& target : targets) {
    nlohmann::json& section = document["databases"][target.name];
    section["server_version"] = connect_raw(target.url)->server_version();
    section["url"] = target.url.redacted();
    section["server_settings"] = server_settings(target);
    BenchContext ctx(settings, target, section, headlines);
    for (const Scenario& s : scenarios()) {
      if (!std::regex_search(s.name, filter)) continue;
      auto t0 = std::chrono::steady_clock::now();
      s.run(ctx);
      section["scenario_seconds"][s.name] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  document["machine"]["load_average_at_end"] = first_line_of("/proc/loadavg", "");
  document["total_seconds"] =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  document["headlines"] = headlines_json(headlines);

  print_table(std::cout, headlines, document);
  if (!json_path.empty()) {
    std::ofstream(json_path) << document.dump(2) << "\n";
    std::cout << "\nfigures: " << json_path << "\n";
  }
  if (!svg_path.empty()) {
    std::ofstream(svg_path) << render_chart(document);
    std::cout << "chart: " << svg_path << "\n";
  }
  if (!markdown_path.empty()) {
    write_markdown(markdown_path, markdown_results(headlines, document, command));
    std::cout << "results section: " << markdown_path << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace dblock::bench

int main(int argc, char** argv) {
  try {
    return dblock::bench::run(argc, argv);
  } catch (const dblock::Error& e) {
    std::cerr << "dblock-bench: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "dblock-bench: " << e.what() << "\n";
  }
  return 1;
}
