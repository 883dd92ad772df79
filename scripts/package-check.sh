#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prove dblock's Debian packages on a clean Debian 12 (bookworm) or 13 (trixie):
#
#   1. build them, or take them built elsewhere (--debs): on this machine, which must run the
#      suite (BUILD_SHARED_LIBS=ON, static archives too, every driver, then `cpack -G DEB`):
#      dblock_*.deb (the program, man pages, completion, schema, systemd examples) and
#      libdblock-dev_*.deb. A suite this machine does not run builds them in its own root
#      filesystem, with its own compiler and libraries: scripts/distro-test.sh SUITE --build
#      --package, which then runs this script with --debs;
#   2. show and check each package (dpkg-deb -I / -c): the files it must hold, its Depends;
#   3. make a clean root filesystem of the suite with mmdebstrap (--variant=apt, with g++ and
#      cmake only; cached as a tarball) and `apt install ./dblock_*.deb ./libdblock-dev_*.deb`
#      in it: apt pulls the dependencies from Debian's registry, and nothing else is there;
#   4. there: every installed program and library finds its libraries; `dblock --version`;
#      `dblock migrate up`, `migrate verify` and `locks` against a PostgreSQL on this machine
#      (the chroot shares its network); each shared library's soname (libdblock_core.so.0.MINOR
#      before 1.0, then .MAJOR), the public API it exports and an internal function it hides;
#      and a PostgreSQL-only service, built once with find_package(dblock COMPONENTS postgresql
#      cleaner) and once with pkg-config (dblock-postgresql dblock-cleaner), on a machine with
#      libpq but no MySQL client, SOCI or libpqxx headers, which must link neither, and runs.
#
# Usage: scripts/package-check.sh [SUITE] [--debs DIR] [--rootfs-only]
#
#   SUITE          bookworm (the default), trixie or sid
#   --debs DIR     check the two packages in DIR instead of building them here
#   --rootfs-only  make the suite's clean root filesystem (or find it in the cache) and stop;
#                  CI makes them so in the background while its suite runs
#
# The build here is configured as scripts/test.sh's (RelWithDebInfo, warnings as errors): the
# same compile commands, so after that build the compiler cache serves every object and this
# one only links; CPack strips the program and the shared libraries.
#
# Environment:
#   BUILD_DIR             build directory (default: build-package)
#   DBLOCK_ROOTFS_CACHE   where the root filesystem tarballs are kept between runs (default:
#                         /var/cache/dblock-rootfs; keyed by the suite and the package list)
#   DBLOCK_DEBIAN_MIRROR  Debian mirror (default: http://deb.debian.org/debian)
#   DBLOCK_TEST_PG_URL    the PostgreSQL to migrate (tables of a prefix of the run's own); when
#                         unset, a throwaway one is started (scripts/dev-db.sh)
#   DBLOCK_TEST_DB_DIR    state directory of that throwaway PostgreSQL
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
cd -- "$repo_root"

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=package-check
source scripts/lib/messages.sh

suite=
debs_dir=
rootfs_only=0
while (($# > 0)); do
  case "$1" in
    --debs)
      (($# >= 2)) || die "--debs needs a directory"
      debs_dir=$2
      shift
      ;;
    --rootfs-only) rootfs_only=1 ;;
    -h | --help) usage ;;
    -*) die "unknown option: $1 (see --help)" ;;
    *)
      [[ -z "$suite" ]] || die "one suite at a time, got '$suite' and '$1'"
      suite=$1
      ;;
  esac
  shift
done
suite=${suite:-bookworm}
case "$suite" in
  bookworm | trixie | sid) ;;
  *) die "unknown suite '$suite': use bookworm, trixie or sid" ;;
esac
((EUID == 0)) || die "run as root: the check installs packages into a chroot"

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

# ---------------------------------------------------------------- the clean root filesystem

# Sets $tarball to the suite's clean root filesystem, made with mmdebstrap unless it is cached.
base_packages=g++,make,cmake,pkg-config,ca-certificates
find_or_make_rootfs() {
  local key opts=(--variant=apt --format=tar --include="$base_packages")
  key=$(printf '%s %s %s' "$suite" "$base_packages" "$mirror" | sha256sum | cut -c1-12)
  tarball="$cache_dir/$suite-package-check-$key.tar"
  # sid's Release file is not always re-signed within its Valid-Until window.
  [[ "$suite" == sid ]] && opts+=(--aptopt='Acquire::Check-Valid-Until "false"')
  mkdir -p "$cache_dir"
  # One run at a time makes it; the others wait and use it.
  exec {lock_fd}>"$cache_dir/$suite-package-check.lock"
  flock "$lock_fd"
  if [[ ! -s "$tarball" ]]; then
    command -v mmdebstrap >/dev/null 2>&1 || scripts/install-deps.sh --package
    rm -rf "$tarball.tmp"
    mmdebstrap "${opts[@]}" "$suite" "$tarball.tmp" "$mirror"
    mv "$tarball.tmp" "$tarball"
  else
    echo "using the cached $tarball"
  fi
  flock -u "$lock_fd"
}

if ((rootfs_only)); then
  heading "root filesystem ($suite, clean)"
  find_or_make_rootfs
  phase_done "root filesystem"
  exit 0
fi

# ---------------------------------------------------------------- the packages

if [[ -z "$debs_dir" ]]; then
  host_suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
  [[ "$host_suite" == "$suite" ]] || die "this machine runs '${host_suite:-?}', not $suite: build" \
    "the $suite packages in its own root filesystem (scripts/distro-test.sh $suite --build" \
    "--package), or pass them with --debs"
  heading "dependencies"
  scripts/install-deps.sh --package
  source scripts/compiler-cache.sh

  heading "build ($build_dir)"
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBLOCK_WERROR=ON \
    -DCMAKE_INSTALL_PREFIX=/usr -DBUILD_SHARED_LIBS=ON -DDBLOCK_INSTALL_ARCHIVES=ON \
    -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_DOCS=OFF \
    -DDBLOCK_WITH_LIBPQ=ON -DDBLOCK_WITH_LIBPQXX=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_SOCI=ON \
    "${extra_cmake_args[@]}"
  cmake --build "$build_dir" -j "$(nproc)"
  phase_done build

  heading "cpack"
  rm -rf "$build_dir/packages"
  (cd "$build_dir" && cpack -G DEB)
  debs_dir=$build_dir/packages
  phase_done cpack
fi

version=$(sed -n 's/^project(dblock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[[ -n "$version" ]] || die "no project(dblock VERSION ...) in CMakeLists.txt"
shopt -s nullglob
cli_debs=("$debs_dir"/dblock_"$version"_*.deb)
dev_debs=("$debs_dir"/libdblock-dev_"$version"_*.deb)
shopt -u nullglob
((${#cli_debs[@]} == 1)) || die "expected one dblock_${version}_*.deb in $debs_dir"
((${#dev_debs[@]} == 1)) || die "expected one libdblock-dev_${version}_*.deb in $debs_dir"
cli_deb=${cli_debs[0]}
dev_deb=${dev_debs[0]}

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
    grep -qE "$1" <<<"$info" || die "$(basename "$deb"): no control field matching '$1'"
    shift
  done
  shift
  for pattern in "$@"; do
    grep -qE "^\\./$pattern\$" <<<"$files" || die "$(basename "$deb") has no file matching '$pattern'"
  done
}
# The program links every driver's client library: dpkg-shlibdeps names the suite's packages
# of them (libpqxx-6.4 on Debian 12, libpqxx-7.10 on 13).
check_package "$cli_deb" '^ Package: dblock$' "^ Version: $version\$" '^ Depends: .*libpq5' \
  '^ Depends: .*libmariadb3' '^ Depends: .*libpqxx-' '^ Depends: .*libsoci-' \
  '^ Depends: .*libc6' -- \
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
# ... and none of the observer adapters' (the program does not use them).
if dpkg-deb -f "$cli_deb" Depends | grep -qE 'prometheus|opentelemetry|libabsl|libprotobuf|libgrpc'; then
  die "the dblock package depends on an observer adapter's libraries: $(dpkg-deb -f "$cli_deb" Depends)"
fi
if dpkg-deb -c "$cli_deb" | grep -q 'usr/include/'; then
  die "the dblock package holds headers"
fi
phase_done "package contents"

# ---------------------------------------------------------------- install and use them

heading "root filesystem ($suite, clean)"
find_or_make_rootfs
root=$(mktemp -d "${TMPDIR:-/tmp}/dblock-package-root.XXXXXX")
mounted=()
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
mount -t proc proc "$root/proc"
mounted+=("$root/proc")
mount --bind /dev "$root/dev"
mounted+=("$root/dev")
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
    die "installing the packages pulled $pkg, which only the $pkg component needs"
  fi
done
# Each installed program and shared library finds every library it needs (a library of another
# suite, such as Debian 12's libpqxx-6.4 on 13, would be missing).
for file in $(in_root dpkg -L dblock libdblock-dev | grep -E '^/usr/(bin/|lib/.*\.so\.)'); do
  [[ -f "$root$file" && ! -L "$root$file" ]] || continue
  missing=$(in_root ldd "$file" | grep 'not found' || true)
  [[ -z "$missing" ]] || die "$file needs libraries that are not installed:"$'\n'"$missing"
  echo "$file: every library found"
done
phase_done "apt install"

heading "shared libraries"
# The soname changes whenever the ABI may (cmake/dblockComponents.cmake): major.minor while the
# major version is 0, the major version from 1.0 on.
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
soversion=$major
((major > 0)) || soversion=0.$minor
for component in core cleaner postgresql; do
  lib=$(find "$root/usr/lib" -name "libdblock_$component.so.$soversion" -print -quit)
  [[ -n "$lib" ]] || die "libdblock_$component.so.$soversion is not installed"
  soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [[ "$soname" == "libdblock_$component.so.$soversion" ]] ||
    die "$lib has the soname '$soname', not libdblock_$component.so.$soversion"
  exports=$(nm -D --defined-only -C "$lib")
  printf '%s: soname %s, %d exported symbols\n' "${lib#"$root"}" "$soname" "$(wc -l <<<"$exports")"
  case $component in
    core)
      grep -qF 'dblock::open_connection(' <<<"$exports" ||
        die "libdblock_core does not export dblock::open_connection"
      ! grep -qF 'dblock::detail::sha256' <<<"$exports" ||
        die "libdblock_core exports an internal function (dblock::detail::sha256)"
      ;;
    postgresql)
      grep -qF 'dblock::connect_libpq(' <<<"$exports" ||
        die "libdblock_postgresql does not export dblock::connect_libpq"
      ;;
  esac
done
phase_done "shared libraries"

heading "dblock --version (in the root filesystem)"
version_line=$(in_root dblock --version)
echo "$version_line"
[[ "$version_line" == "dblock $version (drivers: "* ]] || die "unexpected version line"
for page in dblock dblock-migrate dblock-clean dblock-locks dblock-release dblock-run dblock-doctor; do
  [[ -f "$root/usr/share/man/man1/$page.1" || -f "$root/usr/share/man/man1/$page.1.gz" ]] ||
    die "man page $page(1) is not installed"
done
phase_done "dblock --version"

heading "dblock migrate up (in the root filesystem)"
if [[ -z "${DBLOCK_TEST_PG_URL:-}" ]]; then
  DBLOCK_DEV_DB_DIR="${DBLOCK_TEST_DB_DIR:-${TMPDIR:-/tmp}/dblock-package-db-$(id -u)}"
  export DBLOCK_DEV_DB_DIR
  db_started=1
  scripts/dev-db.sh start --pg-only
  db_env=$(scripts/dev-db.sh env)
  eval "$db_env"
  : "${DBLOCK_TEST_PG_URL:?dev-db.sh did not report a PostgreSQL URL}"
fi
# Tables of the run's own (a prefix of the suite and the time), so the migrations run on an empty
# schema, apart from anything else in that database.
prefix="pkgcheck_${suite}_$(date +%s)_"
for command in "migrate up" "migrate verify" "locks"; do
  # shellcheck disable=SC2086 # the command's words
  in_root env DBLOCK_URL="$DBLOCK_TEST_PG_URL" dblock $command --prefix "$prefix"
done
phase_done "migrate up"

heading "a PostgreSQL-only service, built in the root filesystem"
# expect_service PROGRAM: it links the shared libdblock_core and no MySQL, SOCI or libpqxx
# library, and runs.
expect_service() {
  local libs
  libs=$(in_root ldd "$1")
  echo "$libs"
  grep -q 'libdblock_core\.so' <<<"$libs" || die "$1 does not link the shared libdblock_core"
  if grep -qE 'libmariadb|libmysqlclient|libsoci|libpqxx' <<<"$libs"; then
    die "the PostgreSQL-only service $1 links a MySQL, SOCI or libpqxx library"
  fi
  in_root "$1"
}
mkdir -p "$root/tmp/consumer"
cp tests/consumer/postgresql/CMakeLists.txt tests/consumer/postgresql/main.cpp "$root/tmp/consumer/"
in_root cmake -S /tmp/consumer -B /tmp/consumer/build
in_root cmake --build /tmp/consumer/build
expect_service /tmp/consumer/build/consumer
# The same through pkg-config, whose flags bring every library to link (the standard is the
# service's choice: dblock needs C++20).
# shellcheck disable=SC2016 # expanded in the root filesystem
in_root sh -c 'g++ -std=c++20 /tmp/consumer/main.cpp -o /tmp/consumer/pc-consumer \
  $(pkg-config --cflags --libs dblock-postgresql dblock-cleaner)'
expect_service /tmp/consumer/pc-consumer
phase_done "service"

printf '\n== package-check %s: passed in %d s ==\n' "$suite" $((SECONDS - started))
