#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build and test dblock inside a Debian root filesystem: that distribution's own compiler,
# libraries (libpq, libpqxx, MariaDB Connector/C, SOCI) and PostgreSQL and MariaDB servers.
#
# Usage: scripts/distro-test.sh SUITE [--short | --build | --full | --rootfs-only]
#        [--clang | --clang-only] [--package] [--compile-only] [--fresh]
#
#   SUITE    trixie (Debian 13), sid (Debian unstable) or bookworm (Debian 12)
#   --short  (the default; what CI runs) build the library, the CLI and the unit and integration
#            test programs with GCC and warnings as errors; run the unit tests; start the suite's
#            PostgreSQL and MariaDB with scripts/dev-db.sh; run the integration tests chosen to
#            send each kind of statement dblock has, on every database x driver pair
#   --build  build the library with every driver, the CLI and the unit tests with GCC and warnings
#            as errors, and run the unit tests (no servers)
#   --full   build everything and run the whole suite but the clusters (label ha), the other
#            PostgreSQL majors (versions) and the format check: unit, integration, config, model,
#            faults, package
#   --rootfs-only  make the root filesystem (or find it in the cache) and stop; CI makes both
#            suites' this way in the background while it runs the suite on this machine
#   --clang  also build the library, the CLI and the unit tests (with --full: everything) with the
#            suite's clang, and run the unit tests
#   --clang-only  build and run the form with clang instead of GCC; CI runs trixie's short form
#            so (sid's GCC 16 and this machine's GCC 12 build with warnings as errors in the
#            other steps)
#   --package  build the libraries shared (and their static archives too) with the install
#            prefix /usr, make the Debian packages with `cpack -G DEB` there, and prove them on a
#            clean root filesystem of the suite: scripts/package-check.sh SUITE --debs, run on
#            this machine after the tests; CI runs trixie so
#   --compile-only  configure and build what the form builds, then stop: no tests, servers or
#            packages. A later run of the same form finds its build done; CI runs the distro
#            steps' builds so, at idle priority, while its own tests run
#   --fresh  start cold: remove the cached root filesystems, the compiler cache and the build
#            directory of the suite first (what a CI run on a new machine pays)
#
# The root filesystem is made with mmdebstrap from Debian's package registry (mmdebstrap is
# installed with apt when missing) and kept under $DBLOCK_ROOTFS_CACHE (default
# /var/cache/dblock-rootfs) as <suite>-<key>, the key being a hash of the suite, the mirror and
# the package list, so a change to either makes a new one; one older than
# $DBLOCK_ROOTFS_MAX_AGE_DAYS (default 7) is made again, so sid's stays current. With
# DBLOCK_ROOTFS_CACHE empty it is made in a temporary directory and removed at the end.
# Each run works on an overlay of the cached root filesystem, so the cache is never changed, in
# its own mount, PID, network (loopback only), IPC, UTS and cgroup namespaces: the servers
# listen on a loopback of their own and every process is gone when the run ends. The checkout
# is mounted read-only at /src; the build directory (default build-<suite>, build-<suite>-clang,
# in the checkout) at /build; the compiler cache ($DBLOCK_ROOTFS_CACHE/ccache-<suite>) at
# /ccache.
#
# Prints how long each phase took. Needs root (mmdebstrap, chroot, mounts).
#
# Environment:
#   DBLOCK_ROOTFS_CACHE         where root filesystems are kept (default /var/cache/dblock-rootfs)
#   DBLOCK_ROOTFS_MAX_AGE_DAYS  remake a cached root filesystem older than this (default 7)
#   DBLOCK_DEBIAN_MIRROR        the registry (default http://deb.debian.org/debian)
#   BUILD_DIR                   the GCC build directory (default build-<suite>); the clang one
#                               is its name with -clang after it
#   DBLOCK_DISTRO_CMAKE_ARGS    extra arguments for both configure steps, space-separated
set -euo pipefail

repo_root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
scripts_dir="$repo_root/scripts"

# shellcheck disable=SC2034 # read by lib/messages.sh
script_name=distro-test
source "$(dirname -- "${BASH_SOURCE[0]}")/lib/messages.sh"

parse_args() {
  suite=
  form=short
  clang=0
  package=0
  compile_only=0
  fresh=0
  for arg in "$@"; do
    case "$arg" in
      --short) form=short ;;
      --full) form=full ;;
      --build) form=build ;;
      --rootfs-only) form=rootfs-only ;;
      --clang) clang=1 ;;
      --clang-only) clang=only ;;
      --package) package=1 ;;
      --compile-only) compile_only=1 ;;
      --fresh) fresh=1 ;;
      -h | --help) usage ;;
      -*) die "unknown option: $arg (see --help)" ;;
      *)
        [[ -z "$suite" ]] || die "one suite at a time, got '$suite' and '$arg'"
        suite=$arg
        ;;
    esac
  done
  [[ "$form" != rootfs-only ]] || ((clang == 0 && package == 0 && compile_only == 0)) ||
    die "--rootfs-only builds nothing: it goes with none of --clang, --clang-only, --package, --compile-only"
  case "$suite" in
    bookworm | trixie | sid) ;;
    "") usage ;;
    *) die "unknown suite '$suite': use trixie, sid or bookworm" ;;
  esac
  ((EUID == 0)) || die "needs root (mmdebstrap, chroot and mounts); run it as root"
}

# What the root filesystem holds: the distribution's toolchain, dblock's build dependencies, its
# servers, what the full suite needs besides (faketime, PgBouncer, nftables, iproute2), and what
# CPack's dependency scan runs (file; dpkg-shlibdeps comes with build-essential) for --package.
packages=(
  build-essential cmake pkg-config ccache clang file
  libpq-dev libpqxx-dev libmariadb-dev libsoci-dev libboost-dev
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
  postgresql postgresql-client mariadb-server mariadb-client
  faketime pgbouncer nftables iproute2 procps
)
# Debian 13 also packages opentelemetry-cpp (1.19): the opentelemetry component is built and its
# tests run there. Its API headers include Abseil's, which opentelemetry-cpp-dev does not pull.
packages_trixie=(opentelemetry-cpp-dev libabsl-dev)
mirror=${DBLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${DBLOCK_ROOTFS_CACHE-/var/cache/dblock-rootfs}
max_age_days=${DBLOCK_ROOTFS_MAX_AGE_DAYS:-7}

# ---------------------------------------------------------------- timing

phase_names=()
phase_seconds=()
phase_cpu=()
phase_started=0
phase_cpu_started=0
current_phase=
# CPU milliseconds used so far by this shell's finished children (user + system): cutime and
# cstime of /proc/<this shell>/stat, in clock ticks (fields 16 and 17, after the command name).
children_cpu_ms() {
  local stat fields
  stat=$(<"/proc/$$/stat")
  read -r -a fields <<<"${stat##*) }"
  printf '%d\n' $(((fields[13] + fields[14]) * 1000 / $(getconf CLK_TCK)))
}
begin_phase() {
  current_phase=$1
  phase_started=$SECONDS
  phase_cpu_started=$(children_cpu_ms)
  printf '\n==== distro-test %s: %s ====\n' "$suite" "$current_phase"
}
end_phase() {
  local took=$((SECONDS - phase_started))
  local cpu=$((($(children_cpu_ms) - phase_cpu_started + 500) / 1000))
  phase_names+=("$current_phase")
  phase_seconds+=("$took")
  phase_cpu+=("$cpu")
  printf '==== distro-test %s: %s: %d s (CPU %d s) ====\n' "$suite" "$current_phase" "$took" "$cpu"
}
# The wall-clock time of each phase, and the CPU time its processes used (on a machine shared
# with other work the first grows, the second does not).
print_times() {
  local i total=0 total_cpu=0
  printf '\n==== distro-test %s --%s: times ====\n' "$suite" "$form"
  printf '  %-34s %7s %7s\n' phase wall CPU
  for i in "${!phase_names[@]}"; do
    printf '  %-34s %5d s %5d s\n' "${phase_names[$i]}" "${phase_seconds[$i]}" "${phase_cpu[$i]}"
    total=$((total + phase_seconds[i]))
    total_cpu=$((total_cpu + phase_cpu[i]))
  done
  printf '  %-34s %5d s %5d s\n' "total" "$total" "$total_cpu"
}

# ---------------------------------------------------------------- root filesystem

run_dir=
temp_rootfs=
run_cgroup=
cleanup() {
  local rc=$?
  remove_run_cgroup
  [[ -n "$run_dir" && -d "$run_dir" ]] && rm -rf --one-file-system -- "$run_dir"
  [[ -n "$temp_rootfs" && -d "$temp_rootfs" ]] && rm -rf --one-file-system -- "$temp_rootfs"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ensure_host_tools() {
  local missing=()
  command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
  command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  ((${#missing[@]} == 0)) && return 0
  log "installing ${missing[*]} on this machine"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# Makes a root filesystem of the suite in directory $1 (which must not exist).
make_rootfs() {
  local target=$1
  local opts=(
    --variant=apt --mode=root --format=directory
    # Documentation, manual pages and translations are never read here.
    --dpkgopt=force-unsafe-io
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --include="$(
      IFS=,
      echo "${packages[*]}"
    )"
  )
  # sid's Release file is not always re-signed within its Valid-Until window.
  [[ "$suite" == sid ]] && opts+=(--aptopt='Acquire::Check-Valid-Until "false"')
  mmdebstrap "${opts[@]}" "$suite" "$target" "$mirror"
  # What it holds, for the logs of every run that uses it.
  # shellcheck disable=SC2016 # dpkg-query's format
  chroot "$target" dpkg-query -W -f='${Package} ${Version}\n' >"$target/.dblock-packages"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$target/.dblock-made"
}

# Sets $rootfs to a root filesystem of the suite: the cached one, or a new one.
find_or_make_rootfs() {
  local key
  key=$(printf '%s\n' "recipe 1" "$suite" "$mirror" "${packages[@]}" | sha256sum | cut -c1-12)
  if [[ -z "$cache" ]]; then
    temp_rootfs=$(mktemp -d "${TMPDIR:-/tmp}/dblock-rootfs-$suite.XXXXXX")
    rootfs="$temp_rootfs/root"
    begin_phase "root filesystem (made, not cached)"
    make_rootfs "$rootfs"
    end_phase
    return 0
  fi
  mkdir -p -- "$cache"
  rootfs="$cache/$suite-$key"
  # One run at a time makes or replaces the suite's root filesystem.
  exec {lock_fd}>"$cache/$suite.lock"
  flock "$lock_fd"
  if ((fresh)) && [[ -d "$rootfs" ]]; then
    log "--fresh: removing $rootfs"
    rm -rf --one-file-system -- "$rootfs"
  fi
  if [[ -f "$rootfs/.dblock-made" ]] &&
    [[ -n "$(find "$rootfs/.dblock-made" -mtime "+$((max_age_days - 1))" 2>/dev/null)" ]]; then
    log "$rootfs is older than $max_age_days days: making it again"
    rm -rf --one-file-system -- "$rootfs"
  fi
  if [[ -f "$rootfs/.dblock-made" ]]; then
    begin_phase "root filesystem (cached)"
    log "using $rootfs, made $(cat "$rootfs/.dblock-made")"
    end_phase
  else
    begin_phase "root filesystem (made)"
    rm -rf --one-file-system -- "$rootfs.partial"
    make_rootfs "$rootfs.partial"
    mv -- "$rootfs.partial" "$rootfs"
    # Root filesystems of the suite this script made from an older package list or mirror
    # (<suite>-<key>, with the package list it records); anything else in the cache is left.
    local old
    for old in "$cache/$suite"-*; do
      [[ "$old" == "$rootfs" || ! -f "$old/.dblock-packages" ]] && continue
      [[ "${old##*/}" =~ ^$suite-[0-9a-f]{12}$ ]] || continue
      log "removing the outdated $old"
      rm -rf --one-file-system -- "$old"
    done
    end_phase
  fi
  flock -u "$lock_fd"
}

# ---------------------------------------------------------------- cgroup

# Where cgroup v2 is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid machine);
# empty when it is not.
cgroup2_mount() {
  local candidate
  for candidate in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    if [[ "$(stat -f -c %T "$candidate" 2>/dev/null)" == cgroup2fs ]]; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
}

# The run's own cgroup, a child of this script's: `dblock run` makes its job cgroups under it,
# where no other run on the machine looks (the tests need cgroup v2, as on the machine itself).
make_run_cgroup() {
  local mount own
  mount=$(cgroup2_mount)
  [[ -n "$mount" ]] || return 0
  own=$(sed -n 's/^0:://p' /proc/self/cgroup)
  run_cgroup="$mount${own%/}/dblock-distro-$suite-$$"
  mkdir -- "$run_cgroup" || die "could not make the cgroup $run_cgroup"
  cgroup_mount=$mount
}

# Removes the run's cgroup and whatever the run left in it (empty once the run has ended).
remove_run_cgroup() {
  [[ -n "$run_cgroup" && -d "$run_cgroup" ]] || return 0
  local attempt
  for ((attempt = 0; attempt < 50; attempt++)); do
    find "$run_cgroup" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [[ -d "$run_cgroup" ]] || return 0
    sleep 0.1
  done
  log "could not remove the cgroup $run_cgroup"
}

# ---------------------------------------------------------------- main

# Everything runs from main, which bash reads whole before it starts: an edit to this file
# while it runs does not change the run.
main() {
  parse_args "$@"
  if [[ "$suite" == trixie ]]; then packages+=("${packages_trixie[@]}"); fi
  [[ "$max_age_days" =~ ^[1-9][0-9]*$ ]] ||
    die "DBLOCK_ROOTFS_MAX_AGE_DAYS must be a whole number of days, 1 or more (got '$max_age_days')"
  build_dir=$(realpath -m -- "${BUILD_DIR:-$repo_root/build-$suite}")
  clang_build_dir="$build_dir-clang"
  ensure_host_tools
  if ((fresh)); then
    log "--fresh: removing $build_dir, $clang_build_dir and the suite's compiler cache"
    rm -rf --one-file-system -- "$build_dir" "$clang_build_dir"
    if [[ -n "$cache" ]]; then
      rm -rf --one-file-system -- "$cache/ccache-$suite"
      ((package == 0)) || rm -f -- "$cache/$suite-package-check-"*.tar
    fi
  fi
  if [[ "$form" == rootfs-only ]]; then
    [[ -n "$cache" ]] ||
      die "--rootfs-only keeps the root filesystem in DBLOCK_ROOTFS_CACHE, which is empty"
    find_or_make_rootfs
    print_times
    printf 'distro-test %s: root filesystem ready: %s\n' "$suite" "$rootfs"
    return 0
  fi
  find_or_make_rootfs

  mkdir -p -- "$build_dir"
  [[ "$clang" != 0 ]] && mkdir -p -- "$clang_build_dir"
  ccache_dir=
  if [[ -n "$cache" ]]; then
    ccache_dir="$cache/ccache-$suite"
    mkdir -p -- "$ccache_dir"
  fi
  run_dir=$(mktemp -d "${TMPDIR:-/tmp}/dblock-distro-$suite.XXXXXX")
  times_file="$run_dir/times"
  : >"$times_file"

  cgroup_mount=
  make_run_cgroup
  namespaces=(--mount --propagation private --pid --fork --mount-proc --kill-child --net --ipc
    --uts)
  [[ -n "$run_cgroup" ]] && namespaces+=(--cgroup)

  # The run itself (scripts/lib/distro-run.sh) is PID 1 of its own namespaces: when it ends, the
  # kernel ends every process it left, servers included, and its mounts go with it. It enters the
  # run's cgroup before unshare makes that the root of its cgroup namespace.
  set +e
  DISTRO_SUITE=$suite DISTRO_FORM=$form DISTRO_CLANG=$clang DISTRO_PACKAGE=$package \
    DISTRO_COMPILE_ONLY=$compile_only \
    DISTRO_ROOTFS=$rootfs \
    DISTRO_RUN_DIR=$run_dir DISTRO_SOURCE=$repo_root DISTRO_BUILD=$build_dir \
    DISTRO_CLANG_BUILD=$clang_build_dir DISTRO_CCACHE=$ccache_dir DISTRO_TIMES=$times_file \
    DISTRO_CGROUP2=$cgroup_mount DISTRO_CMAKE_ARGS=${DBLOCK_DISTRO_CMAKE_ARGS:-} \
    bash -c '[[ -z "$1" ]] || echo $$ >"$1/cgroup.procs" || exit 1; shift; exec "$@"' _ \
    "$run_cgroup" unshare "${namespaces[@]}" -- "$scripts_dir/lib/distro-run.sh"
  rc=$?
  set -e
  remove_run_cgroup
  while IFS=$'\t' read -r name took cpu; do
    phase_names+=("$name")
    phase_seconds+=("$took")
    phase_cpu+=("$cpu")
  done <"$times_file"
  if ((rc == 0 && package && !compile_only)); then
    # The packages the run made (in the build that ran the unit tests), on a clean root
    # filesystem of the suite, from this machine: it reaches Debian's registry and a PostgreSQL.
    local packages_dir="$build_dir/packages"
    [[ "$clang" == only ]] && packages_dir="$clang_build_dir/packages"
    begin_phase "packages on a clean $suite"
    "$scripts_dir/package-check.sh" "$suite" --debs "$packages_dir" || rc=$?
    end_phase
  fi
  print_times
  if ((rc != 0)); then
    log "FAILED (exit status $rc)"
    exit "$rc"
  fi
  if ((compile_only)); then
    printf 'distro-test %s --%s --compile-only: built\n' "$suite" "$form"
  else
    printf 'distro-test %s --%s: passed\n' "$suite" "$form"
  fi
}

main "$@"
