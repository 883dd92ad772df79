#!/usr/bin/env bash
# Build dblock and run its whole test suite against throwaway databases.
#
# Usage: scripts/test.sh [extra ctest arguments, e.g. -R Migrator]
#
# Environment:
#   BUILD_DIR          build directory (default: build, relative to the repo)
#   BUILD_TYPE         CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   DBLOCK_CMAKE_ARGS  extra arguments for the CMake configure step
#   DBLOCK_TEST_PG_URL, DBLOCK_TEST_MYSQL_URL
#                      when set, tests use these servers and none is started
#                      for that database
#   DBLOCK_TEST_DB_DIR state directory for the servers started here
#                      (default: ${TMPDIR:-/tmp}/dblock-test-db-$(id -u))
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

build_dir=${BUILD_DIR:-build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
extra_cmake_args=()
read -r -a extra_cmake_args <<<"${DBLOCK_CMAKE_ARGS:-}"

heading() { printf '\n== %s ==\n' "$*"; }

heading "dependencies"
scripts/install-deps.sh

heading "configure ($build_type, $build_dir)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" -DDBLOCK_WERROR=ON \
  "${extra_cmake_args[@]}"

heading "build"
cmake --build "$build_dir" -j "$(nproc)"

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

started_dbs=0
stop_dbs() {
  local rc=$?
  if ((started_dbs)); then
    started_dbs=0
    scripts/dev-db.sh stop || rc=1
  fi
  exit "$rc"
}
trap stop_dbs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
