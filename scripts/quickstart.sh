#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# See dblock work: build it, start a throwaway PostgreSQL, apply the dblock
# schema with the CLI and run the quickstart, transfer and flash sale examples against it.
# Installs only what the demo needs (scripts/install-deps.sh --demo) and builds only the demo's
# programs, with the PostgreSQL driver over libpq and no other driver.
#
# Environment:
#   BUILD_DIR          build directory (default: build-quickstart, relative to the repo; not
#                      scripts/test.sh's build, which has every driver)
#   BUILD_TYPE         CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   DBLOCK_CMAKE_ARGS  extra arguments for the CMake configure step
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

build_dir=${BUILD_DIR:-build-quickstart}
build_type=${BUILD_TYPE:-RelWithDebInfo}
extra_cmake_args=()
read -r -a extra_cmake_args <<<"${DBLOCK_CMAKE_ARGS:-}"

heading() { printf '\n== %s ==\n' "$*"; }

heading "dependencies"
scripts/install-deps.sh --demo
source scripts/compiler-cache.sh

heading "build"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" -DDBLOCK_BUILD_TESTS=OFF \
  -DDBLOCK_WITH_LIBPQ=ON -DDBLOCK_WITH_LIBPQXX=OFF -DDBLOCK_WITH_MYSQL=OFF -DDBLOCK_WITH_SOCI=OFF \
  "${extra_cmake_args[@]}"
cmake --build "$build_dir" -j "$(nproc)" --target dblock_cli quickstart transfer flash_sale

# A private PostgreSQL just for this run, stopped again on every exit path.
DBLOCK_DEV_DB_DIR="${TMPDIR:-/tmp}/dblock-quickstart-db-$(id -u)"
export DBLOCK_DEV_DB_DIR
stop_db() {
  local rc=$?
  scripts/dev-db.sh stop || rc=1
  exit "$rc"
}
trap stop_db EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

heading "start a throwaway PostgreSQL"
scripts/dev-db.sh start --pg-only
db_env=$(scripts/dev-db.sh env)
eval "$db_env"
export DBLOCK_URL="${DBLOCK_TEST_PG_URL:?dev-db.sh did not report a PostgreSQL URL}"

dblock="$build_dir/cli/dblock"

heading "migrate status (fresh database)"
"$dblock" migrate status

heading "migrate up"
"$dblock" migrate up

heading "migrate status (after up)"
"$dblock" migrate status

heading "quickstart example"
"$build_dir/examples/quickstart"

heading "transfer example"
"$build_dir/examples/transfer"

heading "flash sale example (unique-key lock, row lock, optimistic CAS)"
"$build_dir/examples/flash_sale"

heading "done"
