#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build dblock and run its whole test suite against throwaway databases.
#
# Usage: scripts/test.sh [--sanitize LIST | --fuzz] [--build-only]
#                       [extra ctest arguments, e.g. -R Migrator]
#
#   --sanitize LIST  build with -fsanitize=LIST in its own directory and run the suite there:
#                    `--sanitize address,undefined` (build-asan) or `--sanitize thread`
#                    (build-tsan; e.g. with `-L concurrency`). Undefined behaviour is fatal.
#                    Only the test programs and examples are built; the format and package
#                    checks, the server configurations and PostgreSQL majors (labels config,
#                    versions) and the fault suite are left to the normal run.
#                    Suppressions: tests/sanitizers/.
#   --fuzz           build the libFuzzer targets with clang in build-fuzz and run each for
#                    DBLOCK_FUZZ_SECONDS (default 20); no database is needed.
#   --build-only     configure and build what the run would test, then stop (CI builds the
#                    sanitizer builds so in the background, at idle priority)
#
# Environment:
#   BUILD_DIR          build directory (default: build, build-asan, build-tsan or build-fuzz)
#   BUILD_TYPE         CMAKE_BUILD_TYPE (default: RelWithDebInfo; Debug at -O0 -g1 for --sanitize)
#   DBLOCK_CMAKE_ARGS  extra arguments for the CMake configure step
#   DBLOCK_TEST_PG_URL, DBLOCK_TEST_MYSQL_URL
#                      when set, tests use these servers and none is started
#                      for that database
#   DBLOCK_TEST_DB_DIR state directory for the servers started here
#                      (default: ${TMPDIR:-/tmp}/dblock-test-db-$(id -u))
#   DBLOCK_TEST_JOBS   tests run at once (default 2; the tests mostly wait on their
#                      databases and on TTLs, so more than the cores can pay)
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

mode=normal
sanitize=
build_only=0
while (($# > 0)); do
  case "$1" in
    --sanitize)
      [[ -n "${2:-}" ]] || { echo "test.sh: --sanitize needs a list, e.g. address,undefined" >&2; exit 64; }
      [[ "$mode" == normal ]] || { echo "test.sh: --sanitize and --fuzz are separate runs" >&2; exit 64; }
      mode=sanitize sanitize=$2
      shift 2
      ;;
    --fuzz)
      [[ "$mode" == normal ]] || { echo "test.sh: --sanitize and --fuzz are separate runs" >&2; exit 64; }
      mode=fuzz
      shift
      ;;
    --build-only)
      build_only=1
      shift
      ;;
    *) break ;;
  esac
done

build_type=${BUILD_TYPE:-RelWithDebInfo}
jobs=${DBLOCK_TEST_JOBS:-2}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] ||
  { echo "test.sh: DBLOCK_TEST_JOBS must be a whole number, 1 or more (got '$jobs')" >&2; exit 64; }
extra_cmake_args=()
read -r -a extra_cmake_args <<<"${DBLOCK_CMAKE_ARGS:-}"
build_targets=()
ctest_args=()
case "$mode" in
  normal)
    build_dir=${BUILD_DIR:-build}
    ;;
  sanitize)
    case "$sanitize" in
      address,undefined | undefined,address | address) default_dir=build-asan ;;
      thread) default_dir=build-tsan ;;
      *) default_dir=build-${sanitize//,/-} ;;
    esac
    build_dir=${BUILD_DIR:-$default_dir}
    build_type=${BUILD_TYPE:-Debug}
    # -O0: compiles in 60% of the time of -O1, and the suite waits on its databases more than
    # it computes. -g1: line numbers in the reports.
    extra_cmake_args+=(-DDBLOCK_SANITIZE="$sanitize" "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1")
    # The examples run inside the integration suite (ExamplesTest). The fault suite restarts
    # servers and times leases against wall clocks; it runs in the normal build only.
    build_targets=(dblock_unit_tests dblock_integration_tests)
    ctest_args=(-LE 'format|package|config|versions')
    export DBLOCK_TEST_QUICK=1  # tests that repeat a scenario thousands of times repeat it less
    export DBLOCK_MODEL_SECONDS=${DBLOCK_MODEL_SECONDS:-10}  # the model test: 10 s per pair, not 30
    suppressions="$repo_root/tests/sanitizers"
    # verify_asan_link_order=0: ClientClocksHoursOffChangeNothing preloads libfaketime (it only
    # wraps the clock functions) into an instrumented worker, ahead of the ASan runtime.
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:verify_asan_link_order=0:${ASAN_OPTIONS:-}"
    export LSAN_OPTIONS="suppressions=$suppressions/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
    export TSAN_OPTIONS="suppressions=$suppressions/tsan.supp:halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
    ;;
  fuzz)
    build_dir=${BUILD_DIR:-build-fuzz}
    export CC=${DBLOCK_FUZZ_CC:-clang-14} CXX=${DBLOCK_FUZZ_CXX:-clang++-14}
    extra_cmake_args+=(-DDBLOCK_BUILD_FUZZERS=ON -DDBLOCK_FUZZ_SECONDS="${DBLOCK_FUZZ_SECONDS:-20}"
      -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_CLI=OFF -DDBLOCK_BUILD_EXAMPLES=OFF
      -DDBLOCK_INSTALL=OFF -DDBLOCK_WITH_LIBPQXX=OFF -DDBLOCK_WITH_MYSQL=OFF
      -DDBLOCK_WITH_SOCI=OFF)
    build_targets=(dblock_fuzz_url dblock_fuzz_identifier)
    ctest_args=(-L fuzz)
    ;;
esac

heading() { printf '\n== %s ==\n' "$*"; }

heading "dependencies"
scripts/install-deps.sh
source scripts/compiler-cache.sh

heading "configure ($build_type, $build_dir)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" -DDBLOCK_WERROR=ON \
  "${extra_cmake_args[@]}"

heading "build"
target_args=()
for t in "${build_targets[@]}"; do target_args+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${target_args[@]}"
if ((build_only)); then
  printf '\n== built in %s (--build-only: no tests run) ==\n' "$build_dir"
  exit 0
fi

if [[ "$mode" == fuzz ]]; then
  heading "fuzz"
  exec ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "${ctest_args[@]}" "$@"
fi

# Start the databases the caller did not provide. They get their own state
# directory so a developer's `scripts/dev-db.sh start` instance is untouched.
start_args=()
if [[ -z "${DBLOCK_TEST_PG_URL:-}" && -z "${DBLOCK_TEST_MYSQL_URL:-}" ]]; then
  start_args=(start)
elif [[ -z "${DBLOCK_TEST_PG_URL:-}" ]]; then
  start_args=(start --pg-only)
elif [[ -z "${DBLOCK_TEST_MYSQL_URL:-}" ]]; then
  start_args=(start --mysql-only)
fi

source scripts/lib/stop-dbs.sh

if ((${#start_args[@]} > 0)); then
  heading "databases"
  DBLOCK_DEV_DB_DIR="${DBLOCK_TEST_DB_DIR:-${TMPDIR:-/tmp}/dblock-test-db-$(id -u)}"
  export DBLOCK_DEV_DB_DIR
  started_dbs=1
  scripts/dev-db.sh "${start_args[@]}"
  db_env=$(scripts/dev-db.sh env)
  eval "$db_env"
else
  heading "databases (provided by the caller)"
fi
: "${DBLOCK_TEST_PG_URL:?no PostgreSQL URL for the tests}"
: "${DBLOCK_TEST_MYSQL_URL:?no MySQL URL for the tests}"

heading "test"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "${ctest_args[@]}" "$@"
