#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build dblock-bench (Release) and run it against throwaway PostgreSQL and MariaDB servers:
# prints the table (ratios first), writes every figure as JSON, the chart as SVG, and the results
# section of docs/benchmarks.md.
#
# Usage: scripts/bench.sh [dblock-bench options, e.g. --quick, --only hot_key]
#
# Environment:
#   BENCH_BUILD_DIR      build directory (default: build-bench, relative to the repo)
#   BENCH_OUT_DIR        where bench.json, bench.svg and (for a partial run) benchmarks.md go
#                        (default: the build directory)
#   BENCH_MARKDOWN       the page whose results section this run rewrites (default:
#                        docs/benchmarks.md for a full run; for a --quick or --only run, a copy
#                        of it in BENCH_OUT_DIR, so a partial run never replaces the page's figures)
#   DBLOCK_BENCH_PG_URL, DBLOCK_BENCH_MYSQL_URL
#                        when both are set, these servers are measured and none is started
#   DBLOCK_BENCH_DB_DIR  state directory for the servers started here
#                        (default: ${TMPDIR:-/tmp}/dblock-bench-db-$(id -u))
#   DBLOCK_DEV_DB_MYSQL_ARGS
#                        mariadbd options for the server started here (default: a 1 GB buffer
#                        pool and redo log, so the 10-million-row table fills in about a minute
#                        instead of four; the JSON records the settings)
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

build_dir=${BENCH_BUILD_DIR:-build-bench}
out_dir=${BENCH_OUT_DIR:-$build_dir}
started_at=$SECONDS

heading() { printf '\n== %s (%ds) ==\n' "$*" "$((SECONDS - started_at))" >&2; }

# --help: this script's usage and, once built, the program's options; nothing built or started.
for arg in "$@"; do
  if [[ "$arg" == -h || "$arg" == --help ]]; then
    sed -n '3,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    if [[ -x "$build_dir/bench/dblock-bench" ]]; then
      echo
      "$build_dir/bench/dblock-bench" --help
    else
      echo
      echo "dblock-bench's own options are listed here once a first run has built it."
    fi
    exit 0
  fi
done

heading "dependencies"
scripts/install-deps.sh

heading "configure (Release, $build_dir)"
# Only what the benchmark needs: the library with the libpq/libpqxx and libmysqlclient drivers and the
# cleaner. Warnings are errors, as in every other build.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDBLOCK_WERROR=ON -DDBLOCK_BUILD_BENCH=ON \
  -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_CLI=OFF \
  -DDBLOCK_WITH_SOCI=OFF -DDBLOCK_WITH_LIBPQXX=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_INSTALL=OFF \
  -DDBLOCK_BUILD_DOCS=OFF \
  >/dev/null

heading "build"
if ! cmake --build "$build_dir" -j "$(nproc)" --target dblock_bench >"$build_dir/build.log" 2>&1; then
  tail -n 40 "$build_dir/build.log" >&2
  echo "bench: the build failed; the whole log is in $build_dir/build.log" >&2
  exit 1
fi

source scripts/lib/stop-dbs.sh

if [[ -z "${DBLOCK_BENCH_PG_URL:-}" || -z "${DBLOCK_BENCH_MYSQL_URL:-}" ]]; then
  heading "databases"
  DBLOCK_DEV_DB_DIR="${DBLOCK_BENCH_DB_DIR:-${TMPDIR:-/tmp}/dblock-bench-db-$(id -u)}"
  DBLOCK_DEV_DB_MYSQL_ARGS=${DBLOCK_DEV_DB_MYSQL_ARGS-"--innodb-buffer-pool-size=1G --innodb-log-file-size=1G"}
  export DBLOCK_DEV_DB_DIR DBLOCK_DEV_DB_MYSQL_ARGS
  started_dbs=1
  scripts/dev-db.sh start >&2
  db_env=$(scripts/dev-db.sh env)
  eval "$db_env"
  # The URLs travel in the environment, so the password stays out of `ps`.
  export DBLOCK_BENCH_PG_URL="$DBLOCK_TEST_PG_URL"
  export DBLOCK_BENCH_MYSQL_URL="$DBLOCK_TEST_MYSQL_URL"
else
  heading "databases (provided by the caller)"
fi

heading "run"
mkdir -p -- "$out_dir"
markdown=${BENCH_MARKDOWN:-}
if [[ -z "$markdown" ]]; then
  markdown=docs/benchmarks.md
  for arg in "$@"; do
    case "$arg" in
      --quick | --only | --only=*) markdown="$out_dir/benchmarks.md" ;;
    esac
  done
  if [[ "$markdown" != docs/benchmarks.md ]]; then cp -- docs/benchmarks.md "$markdown"; fi
fi
"$build_dir/bench/dblock-bench" --json "$out_dir/bench.json" --svg "$out_dir/bench.svg" \
  --markdown "$markdown" --command "scripts/bench.sh$( (($#)) && printf ' %q' "$@")" "$@"
heading "done"
