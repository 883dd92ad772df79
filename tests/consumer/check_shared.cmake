# SPDX-License-Identifier: Apache-2.0
# package.shared: dblock built with BUILD_SHARED_LIBS=ON (core, cleaner and the libpq driver)
# and installed. Each library has the versioned soname, exports the public API and hides
# internals; the PostgreSQL-only service links the shared libraries from the prefix and runs.
# The same service built with pkg-config runs too (the driver modules keep the driver library,
# which no code calls directly, in a link with --as-needed).
# Run with -D SOURCE_DIR= -D CONSUMER_DIR= -D WORK_DIR= -D CXX= -D SOVERSION= [-D LAUNCHER=].
cmake_minimum_required(VERSION 3.20)  # policies of today (IN_LIST) in script mode
include("${CMAKE_CURRENT_LIST_DIR}/consumer_helpers.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(args "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE= -DBUILD_SHARED_LIBS=ON
         -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_CLI=OFF
         -DDBLOCK_WITH_LIBPQXX=OFF -DDBLOCK_WITH_MYSQL=OFF -DDBLOCK_WITH_SOCI=OFF)
if(LAUNCHER)
  list(APPEND args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" ${args})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --parallel 2)
run("${CMAKE_COMMAND}" --install "${WORK_DIR}/build" --prefix "${prefix}")

foreach(component core cleaner postgresql)
  file(GLOB lib "${prefix}/lib*/libdblock_${component}.so.${SOVERSION}"
       "${prefix}/lib/*/libdblock_${component}.so.${SOVERSION}")
  if(NOT lib)
    message(FATAL_ERROR "libdblock_${component}.so.${SOVERSION} is not installed")
  endif()
  run(readelf -d "${lib}")
  if(NOT last_output MATCHES "Library soname: \\[libdblock_${component}\\.so\\.${SOVERSION}\\]")
    message(FATAL_ERROR "${lib} has the wrong soname:\n${last_output}")
  endif()
  run(nm -D --defined-only -C "${lib}")
  set(exports_${component} "${last_output}")
  string(REGEX MATCHALL "\n" lines "${last_output}")
  list(LENGTH lines n)
  message(STATUS "libdblock_${component}.so.${SOVERSION}: ${n} exported symbols")
endforeach()
# The public API is exported; an internal function (the SHA-256 the migrator checksums with)
# is not.
if(NOT exports_core MATCHES "dblock::open_connection\\(")
  message(FATAL_ERROR "libdblock_core does not export dblock::open_connection")
endif()
if(exports_core MATCHES "dblock::detail::sha256")
  message(FATAL_ERROR "libdblock_core exports an internal function (dblock::detail::sha256)")
endif()
if(NOT exports_postgresql MATCHES "dblock::connect_libpq\\(")
  message(FATAL_ERROR "libdblock_postgresql does not export dblock::connect_libpq")
endif()

run("${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/postgresql" -B "${WORK_DIR}/consumer"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}")
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer")
expect_postgresql_only("${WORK_DIR}/consumer/consumer" "")
run(ldd "${WORK_DIR}/consumer/consumer")
foreach(component core postgresql cleaner)
  if(NOT last_output MATCHES "libdblock_${component}\\.so\\.${SOVERSION} => ${prefix}")
    message(FATAL_ERROR "the service does not run with the installed "
                        "libdblock_${component}.so.${SOVERSION}:\n${last_output}")
  endif()
endforeach()
run("${WORK_DIR}/consumer/consumer")
message(STATUS "shared PostgreSQL-only consumer:\n${last_output}")

find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pc_dirs "${prefix}/lib*/pkgconfig" "${prefix}/lib/*/pkgconfig")
list(JOIN pc_dirs ":" pc_path)
set(ENV{PKG_CONFIG_PATH} "${pc_path}")
run("${PKG_CONFIG}" --cflags --libs dblock-postgresql dblock-cleaner)
string(STRIP "${last_output}" flags)
message(STATUS "pkg-config dblock-postgresql dblock-cleaner: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
file(GLOB libdirs "${prefix}/lib*" "${prefix}/lib/*-*")
list(TRANSFORM libdirs PREPEND "-Wl,-rpath,")
run("${CXX}" -std=c++20 "${CONSUMER_DIR}/postgresql/main.cpp" -o "${WORK_DIR}/pc-consumer" ${flags}
    ${libdirs})
expect_postgresql_only("${WORK_DIR}/pc-consumer" "")
run("${WORK_DIR}/pc-consumer")
message(STATUS "shared PostgreSQL-only consumer through pkg-config:\n${last_output}")
