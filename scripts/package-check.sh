#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build dblock's Debian packages with CPack and prove them on a clean Debian 12 (bookworm):
#
#   1. build (BUILD_SHARED_LIBS=ON, static archives too) and `cpack -G DEB`: dblock_*.deb (the
#      program, man pages, completion, schema, systemd examples) and libdblock-dev_*.deb;
#   2. show and check each package (dpkg-deb -I / -c): the files it must hold, its Depends;
#   3. make a root filesystem with mmdebstrap (--variant=apt bookworm; cached as a tarball) and
#      `apt install ./dblock_*.deb ./libdblock-dev_*.deb` in it, with g++ and cmake: apt pulls
#      the dependencies from Debian's registry;
#   4. there: `dblock --version`; `dblock migrate up` and `migrate verify` against a throwaway
#      PostgreSQL on this machine (the chroot shares its network); and a PostgreSQL-only
#      service built with find_package(dblock COMPONENTS postgresql cleaner) on a machine with
#      libpq but no MySQL client, SOCI or libpqxx headers, which must link neither.
#
# Usage: scripts/package-check.sh
# Environment:
#   BUILD_DIR             build directory (default: build-package)
#   DBLOCK_ROOTFS_CACHE   where the root filesystem tarball is kept between runs (default:
#                         /var/cache/dblock-rootfs; keyed by the package list)
#   DBLOCK_DEBIAN_MIRROR  Debian mirror (default: http://deb.debian.org/debian)
#   DBLOCK_TEST_DB_DIR    state directory of the throwaway PostgreSQL
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

build_dir=${BUILD_DIR:-build-package}
cache_dir=${DBLOCK_ROOTFS_CACHE:-/var/cache/dblock-rootfs}
mirror=${DBLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
extra_cmake_args=()
started=$SECONDS
phase_started=$SECONDS

heading() { printf '\n== %s ==\n' "$*"; }
phase_done() {
  printf '== %s: %d s ==\n' "$1" $((SECONDS - phase_started))
  phase_started=$SECONDS
}
fail() {
  echo "package-check: $*" >&2
  exit 1
}

if ((EUID != 0)); then
  fail "run as root: the check installs packages into a chroot"
fi

heading "dependencies"
scripts/install-deps.sh --package
source scripts/compiler-cache.sh

heading "build ($build_dir)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DBUILD_SHARED_LIBS=ON -DDBLOCK_INSTALL_ARCHIVES=ON -DDBLOCK_BUILD_TESTS=OFF \
  -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_WITH_LIBPQ=ON -DDBLOCK_WITH_LIBPQXX=ON \
  -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_SOCI=ON "${extra_cmake_args[@]}"
cmake --build "$build_dir" -j "$(nproc)"
phase_done build

heading "cpack"
rm -rf "$build_dir/packages"
(cd "$build_dir" && cpack -G DEB)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build_dir/CMakeCache.txt")
shopt -s nullglob
cli_debs=("$build_dir"/packages/dblock_"$version"_*.deb)
dev_debs=("$build_dir"/packages/libdblock-dev_"$version"_*.deb)
shopt -u nullglob
((${#cli_debs[@]} == 1)) || fail "expected one dblock_${version}_*.deb in $build_dir/packages"
((${#dev_debs[@]} == 1)) || fail "expected one libdblock-dev_${version}_*.deb in $build_dir/packages"
cli_deb=${cli_debs[0]}
dev_deb=${dev_debs[0]}
phase_done cpack

heading "package contents"
# check_package DEB FIELD-PATTERN... -- PATH-PATTERN...: the control fields and files it must have.
check_package() {
  local deb=$1 info files
  shift
  info=$(dpkg-deb -I "$deb")
  files=$(dpkg-deb -c "$deb" | awk '{print $6}')
  printf '%s\n\n' "$info"
  printf '%s\n' "$files"
  while (($# > 0)) && [[ "$1" != -- ]]; do
    grep -qE "$1" <<<"$info" || fail "$(basename "$deb"): no control field matching '$1'"
    shift
  done
  shift
  for pattern in "$@"; do
    grep -qE "^\\./$pattern\$" <<<"$files" || fail "$(basename "$deb") has no file matching '$pattern'"
  done
}
check_package "$cli_deb" '^ Package: dblock$' "^ Version: $version\$" '^ Depends: .*libpq5' \
  '^ Depends: .*libmariadb3' '^ Depends: .*libc6' -- \
  usr/bin/dblock 'usr/share/man/man1/dblock\.1' 'usr/share/man/man1/dblock-run\.1' \
  usr/share/bash-completion/completions/dblock usr/share/dblock/schema/postgresql.sql \
  usr/share/dblock/schema/mysql.sql 'usr/share/dblock/migrations/postgresql/0001_.*\.sql' \
  'usr/share/dblock/examples/systemd/dblock-run@\.service' usr/share/doc/dblock/LICENSE
check_package "$dev_deb" '^ Package: libdblock-dev$' "^ Version: $version\$" \
  '^ Depends: .*libpq-dev' '^ Suggests: .*libsoci-dev' -- \
  usr/include/dblock/lock.hpp usr/include/dblock/version.hpp usr/include/dblock/export.hpp \
  usr/include/dblock/libpq.hpp 'usr/lib/.*libdblock_core\.so\.[0-9.]+' \
  'usr/lib/.*libdblock_core\.a' 'usr/lib/.*libdblock_postgresql\.a' \
  'usr/lib/.*cmake/dblock/dblockConfig\.cmake' 'usr/lib/.*pkgconfig/dblock-postgresql\.pc' \
  usr/share/doc/libdblock-dev/LICENSE
if dpkg-deb -c "$cli_deb" | grep -q 'usr/include/'; then
  fail "the dblock package holds headers"
fi
phase_done "package contents"

heading "root filesystem (bookworm)"
base_packages=g++,make,cmake,ca-certificates
key=$(printf '%s %s %s' bookworm "$base_packages" "$mirror" | sha256sum | cut -c1-12)
tarball="$cache_dir/bookworm-package-check-$key.tar"
if [[ ! -s "$tarball" ]]; then
  mkdir -p "$cache_dir"
  rm -rf "$tarball.tmp"
  mmdebstrap --variant=apt --format=tar --include="$base_packages" bookworm "$tarball.tmp" \
    "$mirror"
  mv "$tarball.tmp" "$tarball"
else
  echo "using the cached $tarball"
fi
root=$(mktemp -d "${TMPDIR:-/tmp}/dblock-package-root.XXXXXX")
mounted=()
DBLOCK_DEV_DB_DIR="${DBLOCK_TEST_DB_DIR:-${TMPDIR:-/tmp}/dblock-package-db-$(id -u)}"
export DBLOCK_DEV_DB_DIR
db_started=0
cleanup() {
  local rc=$?
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[i]}" || rc=1; done
  rm -rf --one-file-system "$root"
  if ((db_started)); then scripts/dev-db.sh stop || rc=1; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
tar -xf "$tarball" -C "$root"
for fs in proc dev; do
  case $fs in
    proc) mount -t proc proc "$root/proc" ;;
    dev) mount --bind /dev "$root/dev" ;;
  esac
  mounted+=("$root/$fs")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
phase_done "root filesystem"

heading "apt install ./dblock_*.deb ./libdblock-dev_*.deb"
mkdir -p "$root/tmp/debs"
cp "$cli_deb" "$dev_deb" "$root/tmp/debs/"
in_root apt-get update -q
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  "/tmp/debs/$(basename "$cli_deb")" "/tmp/debs/$(basename "$dev_deb")"
for pkg in libmariadb-dev libsoci-dev libpqxx-dev libboost-dev; do
  if in_root dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    fail "installing the packages pulled $pkg, which only the $pkg component needs"
  fi
done
phase_done "apt install"

heading "dblock --version (in the root filesystem)"
version_line=$(in_root dblock --version)
echo "$version_line"
[[ "$version_line" == "dblock $version (drivers: "* ]] || fail "unexpected version line"
for page in dblock dblock-migrate dblock-clean dblock-locks dblock-release dblock-run dblock-doctor; do
  [[ -f "$root/usr/share/man/man1/$page.1" || -f "$root/usr/share/man/man1/$page.1.gz" ]] ||
    fail "man page $page(1) is not installed"
done
phase_done "dblock --version"

heading "dblock migrate up (in the root filesystem, against a throwaway PostgreSQL)"
db_started=1
scripts/dev-db.sh start --pg-only
db_env=$(scripts/dev-db.sh env)
eval "$db_env"
: "${DBLOCK_TEST_PG_URL:?dev-db.sh did not report a PostgreSQL URL}"
# Tables of their own (prefix pkgcheck_), apart from anything else in that database.
in_root env DBLOCK_URL="$DBLOCK_TEST_PG_URL" dblock migrate up --prefix pkgcheck_
in_root env DBLOCK_URL="$DBLOCK_TEST_PG_URL" dblock migrate verify --prefix pkgcheck_
in_root env DBLOCK_URL="$DBLOCK_TEST_PG_URL" dblock locks --prefix pkgcheck_
phase_done "migrate up"

heading "a PostgreSQL-only service, built in the root filesystem"
mkdir -p "$root/tmp/consumer"
cp tests/consumer/postgresql/CMakeLists.txt tests/consumer/postgresql/main.cpp "$root/tmp/consumer/"
in_root cmake -S /tmp/consumer -B /tmp/consumer/build
in_root cmake --build /tmp/consumer/build
libs=$(in_root ldd /tmp/consumer/build/consumer)
echo "$libs"
grep -q 'libdblock_core\.so' <<<"$libs" || fail "the service does not link the shared libdblock_core"
if grep -qE 'libmariadb|libmysqlclient|libsoci|libpqxx' <<<"$libs"; then
  fail "the PostgreSQL-only service links a MySQL, SOCI or libpqxx library"
fi
in_root /tmp/consumer/build/consumer
phase_done "service"

printf '\n== package-check: passed in %d s ==\n' $((SECONDS - started))
