# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts (quickstart.sh, test.sh, package-check.sh), which so build with
# the same compile commands: compile through ccache when it is installed (install-deps.sh
# installs it), so a second build of the same sources, in any checkout or build directory on
# this machine, reuses the objects of the first. Adds the launcher to extra_cmake_args.
if command -v ccache >/dev/null 2>&1; then
  extra_cmake_args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so clones in other directories share the cache; the
  # precompiled GoogleTest header is accepted as ccache's documentation describes.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
fi

# RelWithDebInfo with line tables only (-g1): what a failing test's backtrace and a debugger's
# `bt` need. Full debug information (CMake's default -g) made a library file take 40% longer to
# compile at -O2 (election.cpp: 13.3 s against 9.3 s), and most of a cold CI run is compiling.
# Flags given in DBLOCK_CMAKE_ARGS win.
if [[ " ${extra_cmake_args[*]} " != *" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="* ]]; then
  extra_cmake_args+=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
fi
