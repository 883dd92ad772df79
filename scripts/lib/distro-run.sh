#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The inside of scripts/distro-test.sh, which starts it as PID 1 of new mount, PID, network, IPC,
# UTS (and, where the machine has cgroup v2, cgroup) namespaces, with its settings in DISTRO_*
# variables. Mounts an overlay of the cached root filesystem (so the cache stays as it was made)
# with /proc, /sys, /dev, a fresh /dev/shm and /tmp, the checkout read-only at /src and the
# build directories, brings up a loopback of its own, then runs each phase in a chroot and
# appends its name and seconds to $DISTRO_TIMES. Everything it mounted or started ends with it.
set -euo pipefail
: "${DISTRO_SUITE:?run scripts/distro-test.sh, not this file}"

readonly root="$DISTRO_RUN_DIR/root"
readonly db_dir=/tmp/dblock-db
readonly jobs=2

log() { printf 'distro-test: %s\n' "$*" >&2; }

# ---------------------------------------------------------------- the root filesystem

mount_root() {
  mkdir -p "$DISTRO_RUN_DIR/upper" "$DISTRO_RUN_DIR/work" "$root"
  mount -t overlay overlay \
    -o "lowerdir=$DISTRO_ROOTFS,upperdir=$DISTRO_RUN_DIR/upper,workdir=$DISTRO_RUN_DIR/work" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  if [[ -n "${DISTRO_CGROUP2:-}" ]]; then
    # A cgroup2 mount made in the run's cgroup namespace: `dblock run` sees the run's cgroup as
    # the root, and makes and sweeps its job cgroups there, away from the machine's.
    # (The bound machine's mount is taken off first: the kernel refuses the same file system on
    # the root of a mount of it.)
    umount --lazy "$root$DISTRO_CGROUP2"
    mount -t cgroup2 cgroup2 "$root$DISTRO_CGROUP2"
  fi
  mount --rbind /dev "$root/dev"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
  mkdir -p "$root/src" "$root/build" "$root/build-clang" "$root/ccache"
  mount --bind "$DISTRO_SOURCE" "$root/src"
  mount -o remount,bind,ro "$root/src"
  mount --bind "$DISTRO_BUILD" "$root/build"
  [[ "$DISTRO_CLANG" != 0 ]] && mount --bind "$DISTRO_CLANG_BUILD" "$root/build-clang"
  [[ -n "$DISTRO_CCACHE" ]] && mount --bind "$DISTRO_CCACHE" "$root/ccache"
  ip link set lo up
  hostname "dblock-$DISTRO_SUITE"
}

# Runs a bash script in the root filesystem, with a clean environment and /tmp/dblock-env
# (the servers' URLs, once started) sourced first.
in_root() {
  local env=(
    HOME=/root LANG=C.UTF-8 TERM=dumb
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  )
  if [[ -n "$DISTRO_CCACHE" ]]; then
    # shellcheck disable=SC2054 # the commas are in one value
    env+=(CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=3G
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime)
  fi
  chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -c \
    'set -euo pipefail; [[ -r /tmp/dblock-env ]] && source /tmp/dblock-env; cd /; '"$1"
}

# CPU milliseconds used so far by this shell's finished children (user + system): cutime and
# cstime of /proc/<this shell>/stat, in clock ticks (fields 16 and 17, after the command name).
children_cpu_ms() {
  local stat fields
  stat=$(<"/proc/$$/stat")
  read -r -a fields <<<"${stat##*) }"
  printf '%d\n' $(((fields[13] + fields[14]) * 1000 / $(getconf CLK_TCK)))
}

# Runs one phase and records its wall-clock seconds and the CPU seconds its processes used: on
# a machine shared with other work the wall clock grows, the CPU time does not.
phase() {
  local name=$1 script=$2 started=$SECONDS rc=0 cpu_before cpu
  cpu_before=$(children_cpu_ms)
  printf '\n==== distro-test %s: %s ====\n' "$DISTRO_SUITE" "$name"
  in_root "$script" || rc=$?
  local took=$((SECONDS - started))
  cpu=$((($(children_cpu_ms) - cpu_before + 500) / 1000))
  printf '%s\t%d\t%d\n' "$name" "$took" "$cpu" >>"$DISTRO_TIMES"
  if ((rc != 0)); then
    printf '==== distro-test %s: %s: FAILED after %d s ====\n' "$DISTRO_SUITE" "$name" "$took"
    exit "$rc"
  fi
  printf '==== distro-test %s: %s: %d s (CPU %d s) ====\n' "$DISTRO_SUITE" "$name" "$took" "$cpu"
}

# ---------------------------------------------------------------- what runs

# The drivers must all be built (a missing library fails the configure step instead of leaving
# its pairs out), and the test list must name a pair of each driver. -O2 as a release build,
# without debugging information: the same warnings, and about 30% less compile time.
configure_flags="-DCMAKE_BUILD_TYPE=RelWithDebInfo '-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG'"
configure_flags+=" -DDBLOCK_WERROR=ON"
configure_flags+=" -DDBLOCK_WITH_LIBPQXX=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_SOCI=ON"
if [[ -n "$DISTRO_CCACHE" ]]; then
  configure_flags+=" -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
# The full form builds the benchmark program too: every target there is. The short form builds
# only the integration test files its tests are in (and no examples, which only ExamplesTest
# runs): half the compile time.
if [[ "$DISTRO_FORM" == full ]]; then
  configure_flags+=" -DDBLOCK_BUILD_BENCH=ON -DDBLOCK_INTEGRATION_SOURCES=all"
else
  configure_flags+=" -DDBLOCK_INTEGRATION_SOURCES=statements -DDBLOCK_BUILD_EXAMPLES=OFF"
fi
# --package: the libraries shared, with their static archives, installed under /usr, as the
# Debian packages have them; the same objects as a static build (the compiler cache serves
# either), so only the links are added. cpack installs what the build phase built, without
# building the other targets first (the integration tests, the examples).
if [[ "$DISTRO_PACKAGE" == 1 ]]; then
  configure_flags+=" -DBUILD_SHARED_LIBS=ON -DDBLOCK_INSTALL_ARCHIVES=ON -DCMAKE_INSTALL_PREFIX=/usr"
  configure_flags+=" -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON"
else
  configure_flags+=" -DBUILD_SHARED_LIBS=OFF -DDBLOCK_INSTALL_ARCHIVES=OFF"
  configure_flags+=" -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=OFF"
fi
read -r -a extra_cmake_args <<<"${DISTRO_CMAKE_ARGS:-}"
for arg in "${extra_cmake_args[@]}"; do configure_flags+=" $(printf '%q' "$arg")"; done

# The short form's integration tests: the suites that together send every statement dblock has
# (see docs/testing-distros.md), on every database x driver pair, less the tests that mostly
# wait out TTLs, timeouts, renewals and contention (the first 12 are the ones the config label
# leaves out; the others took 1.5 to 4 s a pair): the tests kept send their statements too.
short_suites=(
  UniqueKeyLockTest FairWaitTest LookAlikeOwnersTest CleanerTest RowLockTest OptimisticLockTest
  SessionLockTest SemaphoreTest ReadWriteLockTest LockSetTest MigratorTest SchemaFileTest
  TransactionEndTest DriverTest ListenTest NativeHandles CliDoctorTest CliReleaseTest
  OpenTelemetryTest ElectionHandOffTest FairGrantTest
)
short_skipped=(
  UniqueKeyLockTest.AutoRenew UniqueKeyLockTest.TheRenewerKeeps UniqueKeyLockTest.TimedAcquire
  UniqueKeyLockTest.HandoffToABlockedWaiter UniqueKeyLockTest.EachReleaseWakesAWaiter
  UniqueKeyLockTest.AReleaseMadeBeforeTheListenerListens
  UniqueKeyLockTest.WaitingFallsBackToPolling RowLockTest.ATimedWaitEndsAfterItsTimeout
  RowLockTest.ALeaseHeldPastItsTtl RowLockTest.KillingTheHolders
  OptimisticLockTest.ALeaseKeptPastItsTtl CleanerTest.MaxTimeAndStop
  RowLockTest.AKilledHoldersLease SemaphoreTest.NeverMoreThanNHolders
  UniqueKeyLockTest.AcquiringALongLease ReadWriteLockTest.NeverAWriterWithAReader
  LockSetTest.SetsAskedForInOppositeOrders UniqueKeyLockTest.OnlyTheReleaseThatFrees
  UniqueKeyLockTest.AHandedOverLeaseCounts UniqueKeyLockTest.AWaiterWhoseTimeRunsOut
  FairWaitTest.AReleaseHandsTheKeyToTheQueuesHeadOnly RowLockTest.ATimedOutWaitThatRaced
  OptimisticLockTest.NoLostUpdates SessionLockTest.ATimedWaitEndsNearItsBound
  LockSetTest.AKeyHeldByAnotherOwner LockSetTest.AKeyLostBeforeTheLast
  LockSetTest.WithLocksThrowsLeaseLost MigratorTest.ConcurrentMigratorsUnderStricterIsolation
  SessionLockTest.LostStaysFalseWhileAnotherLease CliReleaseTest.AnExpiredLeaseIsReleased
  FairWaitTest.AFairWaiterThatHearsEveryRelease ElectionHandOffTest.AnUnnamedHandOff
  ElectionHandOffTest.AHandOffToACandidateThatDoesNotWait
  ElectionHandOffTest.AHandOffToACandidateThatDied ElectionHandOffTest.BeforeMigration0010
)
short_tests_regex="[./]($(IFS='|'; echo "${short_suites[*]}"))\\."
short_skipped_regex=$(IFS='|'; echo "${short_skipped[*]}")
short_skipped_regex="[./](${short_skipped_regex//./\\.})"

# What --build builds: the CLI links every driver, so every driver's code is compiled; with
# --package, the libraries of every component the suite has too (dblock_libraries; cpack fails
# on a library it installs that was not built). The short form adds the integration test files.
build_targets="dblock_cli dblock_unit_tests"
if [[ "$DISTRO_PACKAGE" == 1 ]]; then
  build_targets+=" dblock_libraries"
fi

# `cpack -G DEB` in build directory $1 (--package): the packages in $1/packages, their Depends
# from the suite's dpkg-shlibdeps.
package_phase() {
  phase "cpack ($2)" "
    cd $1 && rm -rf packages
    cpack -G DEB >cpack.log || { cat cpack.log; exit 1; }
    ls -l packages/*.deb"
}

# One compiler's build and what runs on it: compiler_phases NAME CC CXX DIR MAIN. The main
# build (GCC's, or clang's with --clang-only) runs the form; the other (clang's with --clang)
# builds the library, the CLI and the unit tests (with --full: everything) and runs the unit
# tests. The phases' scripts run in the root filesystem: what they expand, they expand there.
# shellcheck disable=SC2016
compiler_phases() {
  local name=$1 cc=$2 cxx=$3 dir=$4 main=$5
  phase "configure ($name)" "
    CC=$cc CXX=$cxx cmake -S /src -B $dir $configure_flags >$dir/configure.log ||
      { cat $dir/configure.log; exit 1; }
    grep -E '^-- dblock' $dir/configure.log || true"

  if [[ "$DISTRO_FORM" == full ]]; then
    phase "build ($name, everything)" "cmake --build $dir -j $jobs"
  elif [[ "$DISTRO_FORM" == build || "$main" == 0 ]]; then
    phase "build ($name, library, CLI, unit tests)" "cmake --build $dir -j $jobs \
      --target $build_targets"
  else
    phase "build ($name)" "cmake --build $dir -j $jobs --target $build_targets \
      dblock_integration_tests"
  fi
  [[ "$DISTRO_COMPILE_ONLY" == 1 ]] && return 0

  [[ "$main" == 0 || "$DISTRO_FORM" == build ]] || phase "check the pairs" '
    names=$(ctest --test-dir '"$dir"' -N)
    for pair in postgresql_libpq postgresql_libpqxx postgresql_soci mysql_libmysqlclient \
      mysql_soci; do
      grep -qE "/$pair( |$)" <<<"$names" ||
        { echo "no test runs on $pair: is its driver built?"; exit 1; }
    done
    echo "every driver has its pairs"'

  phase "unit tests ($name)" "ctest --test-dir $dir --no-tests=error -L '^unit' -j $jobs \
    --output-on-failure"
  [[ "$main" == 1 ]] || return 0
  if [[ "$DISTRO_PACKAGE" == 1 ]]; then package_phase "$dir" "$name"; fi
  [[ "$DISTRO_FORM" != build ]] || return 0  # no servers, no integration tests

  phase "servers" "
    export DBLOCK_DEV_DB_DIR=$db_dir
    /src/scripts/dev-db.sh start
    /src/scripts/dev-db.sh env >/tmp/dblock-env"
  if [[ "$DISTRO_FORM" == full ]]; then
    phase "suite ($name, full)" "ctest --test-dir $dir --no-tests=error \
      -LE '^(unit|unit-concurrency|ha|versions|format)$' -j $jobs --output-on-failure"
  else
    phase "integration tests ($name, short)" "ctest --test-dir $dir --no-tests=error \
      -L '^integration' -R '$short_tests_regex' -E '$short_skipped_regex' -j $jobs \
      --output-on-failure"
  fi
}

# The phases' scripts run in the root filesystem: what they expand, they expand there.
# shellcheck disable=SC2016
run_phases() {
  phase "versions" '
    echo "gcc:        $(g++ --version | head -n 1)"
    echo "clang:      $(clang++ --version | head -n 1)"
    echo "cmake:      $(cmake --version | head -n 1)"
    echo "libpq:      $(pkg-config --modversion libpq)"
    echo "libpqxx:    $(pkg-config --modversion libpqxx)"
    echo "libmariadb: $(pkg-config --modversion libmariadb)"
    soci=$(sed -n "s/^#define SOCI_LIB_VERSION \"\(.*\)\"/\1/p" /usr/include/soci/version.h)
    echo "soci:       ${soci//_/.}"
    for pg in /usr/lib/postgresql/*/bin/postgres; do echo "postgresql: $("$pg" --version)"; done
    echo "mariadb:    $(mariadbd --version 2>/dev/null | sed "s/ from Debian.*//")"
    echo "googletest: $(dpkg-query -W -f="\${Version}" libgtest-dev)"'

  case "$DISTRO_CLANG" in
    0) compiler_phases gcc gcc g++ /build 1 ;;
    only) compiler_phases clang clang clang++ /build-clang 1 ;;
    *)
      compiler_phases gcc gcc g++ /build 1
      compiler_phases clang clang clang++ /build-clang 0
      ;;
  esac
}

# Everything runs from main, which bash reads whole before it starts: an edit to this file
# while it runs does not change the run.
main() {
  mount_root
  run_phases
}

main; exit
