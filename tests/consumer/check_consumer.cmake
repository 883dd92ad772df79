# SPDX-License-Identifier: Apache-2.0
# package.consumer: installs the dblock build in BUILD_DIR into a scratch prefix and builds
# projects outside dblock's tree against it:
#   1. find_package(dblock) without components (dblock::dblock), no CMAKE_CXX_STANDARD;
#   2. find_package(dblock COMPONENTS postgresql cleaner) on a machine that, as far as CMake and
#      pkg-config can tell, has libpq but no MySQL client, SOCI, Boost or libpqxx: it must
#      configure, link neither libmariadb nor SOCI nor libpqxx, and run;
#   3. find_package(dblock COMPONENTS mysql) on that machine: must fail, saying what to install;
#      so must find_package(dblock COMPONENTS prometheus) without prometheus-cpp, when installed,
#      and find_package(dblock COMPONENTS opentelemetry) without opentelemetry-cpp, installed or
#      not (then naming what building it needs);
#   4. pkg-config: the PostgreSQL-only service again (dblock-postgresql + dblock-cleaner), and
#      the flags of every module: no -std=, no library twice.
# Run with -D BUILD_DIR= -D CONSUMER_DIR= -D WORK_DIR= -D BUILD_TYPE= -D CXX=.
cmake_minimum_required(VERSION 3.20)  # policies of today (IN_LIST) in script mode
include("${CMAKE_CURRENT_LIST_DIR}/consumer_helpers.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

set(config_args)
if(BUILD_TYPE)
  set(config_args --config "${BUILD_TYPE}")
endif()
run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" ${config_args})
set(consumer_args "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
                  "-DCMAKE_CXX_COMPILER=${CXX}")

# 1. Everything, no CMAKE_CXX_STANDARD.
run("${CMAKE_COMMAND}" -S "${CONSUMER_DIR}" -B "${WORK_DIR}/all" ${consumer_args})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/all")
expect_cxx20_from_dblock("${WORK_DIR}/all")
run("${WORK_DIR}/all/consumer")
message(STATUS "dblock::dblock consumer:\n${last_output}")

# A machine with libpq only: pkg-config finds libpq (and nlohmann/json, which the core headers
# include) and nothing else; CMake's searches skip /usr/include, where SOCI's and Boost's headers
# are (libpq's are in /usr/include/postgresql, a directory of its own).
set(only_libpq "${WORK_DIR}/only-libpq-pkgconfig")
file(MAKE_DIRECTORY "${only_libpq}")
find_program(PKG_CONFIG pkg-config REQUIRED)
set(modules libpq nlohmann_json)  # and what they require (libpq: OpenSSL's modules)
set(copied "")
while(modules)
  list(POP_FRONT modules module)
  if(module IN_LIST copied)
    continue()
  endif()
  list(APPEND copied ${module})
  run("${PKG_CONFIG}" --path ${module})
  string(STRIP "${last_output}" pc)
  file(COPY "${pc}" DESTINATION "${only_libpq}")
  run("${PKG_CONFIG}" --print-requires --print-requires-private ${module})
  string(REGEX MATCHALL "(^|\n)[A-Za-z0-9_.+-]+" required "${last_output}")
  foreach(r IN LISTS required)
    string(STRIP "${r}" r)
    list(APPEND modules ${r})
  endforeach()
endwhile()
file(GLOB prefix_pc_dirs "${prefix}/lib*/pkgconfig" "${prefix}/lib/*/pkgconfig")
list(JOIN prefix_pc_dirs ":" prefix_pc_path)
set(only_libpq_env "PKG_CONFIG_LIBDIR=${only_libpq}:${prefix_pc_path}" "PKG_CONFIG_PATH=")
set(only_libpq_args "-DCMAKE_IGNORE_PATH=/usr/include")

# 2. PostgreSQL only.
run("${CMAKE_COMMAND}" -E env ${only_libpq_env}
    "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/postgresql" -B "${WORK_DIR}/postgresql"
    ${consumer_args} ${only_libpq_args})
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/postgresql")
expect_cxx20_from_dblock("${WORK_DIR}/postgresql")
expect_postgresql_only("${WORK_DIR}/postgresql/consumer"
                       "${WORK_DIR}/postgresql/CMakeFiles/consumer.dir/link.txt")
run("${WORK_DIR}/postgresql/consumer")
message(STATUS "COMPONENTS postgresql cleaner consumer:\n${last_output}")

# 3. mysql on that machine: a clear failure.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${only_libpq_env}
                        "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/mysql_missing"
                        -B "${WORK_DIR}/mysql_missing" ${consumer_args} ${only_libpq_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out} ${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(dblock COMPONENTS mysql) succeeded without a MySQL client "
                      "library:\n${out}\n${err}")
endif()
if(NOT flat MATCHES "dblock component 'mysql' is not available: it needs [^)]*libmariadb-dev\\)")
  message(FATAL_ERROR "find_package(dblock COMPONENTS mysql) failed without naming what to "
                      "install:\n${err}")
endif()
set(mysql_message "${CMAKE_MATCH_0}")
if(flat MATCHES "install-deps")
  message(FATAL_ERROR "the installed package names a script of dblock's source tree:\n${err}")
endif()
message(STATUS "COMPONENTS mysql without a MySQL client fails: ${mysql_message}")

# The prometheus component without prometheus-cpp: a clear failure too.
if(EXISTS "${prefix}/include/dblock/prometheus.hpp")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${only_libpq_env}
                          "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/prometheus_missing"
                          -B "${WORK_DIR}/prometheus_missing" ${consumer_args} ${only_libpq_args}
                          -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out} ${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "find_package(dblock COMPONENTS prometheus) succeeded without "
                        "prometheus-cpp:\n${out}\n${err}")
  endif()
  if(NOT flat MATCHES "dblock component 'prometheus' is not available: it needs [^)]*prometheus-cpp-dev\\)")
    message(FATAL_ERROR "find_package(dblock COMPONENTS prometheus) failed without naming what to "
                        "install:\n${err}")
  endif()
  message(STATUS "COMPONENTS prometheus without prometheus-cpp fails: ${CMAKE_MATCH_0}")
endif()

# The opentelemetry component without opentelemetry-cpp: a clear failure, naming the package,
# whether this installation has the component (the dependency is missing) or not (it was built
# without it, as on Debian 12).
execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${only_libpq_env}
                        "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/opentelemetry_missing"
                        -B "${WORK_DIR}/opentelemetry_missing" ${consumer_args} ${only_libpq_args}
                        -DCMAKE_DISABLE_FIND_PACKAGE_opentelemetry-cpp=ON
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " flat "${out} ${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(dblock COMPONENTS opentelemetry) succeeded without "
                      "opentelemetry-cpp:\n${out}\n${err}")
endif()
if(EXISTS "${prefix}/include/dblock/opentelemetry.hpp")
  set(expected "dblock component 'opentelemetry' is not available: it needs [^)]*opentelemetry-cpp-dev libabsl-dev\\)")
else()
  set(expected "dblock component 'opentelemetry' is not available: this dblock installation has no 'opentelemetry' component [^)]*\\);[^:]*: install [^)]*opentelemetry-cpp-dev libabsl-dev\\)")
endif()
if(NOT flat MATCHES "${expected}")
  message(FATAL_ERROR "find_package(dblock COMPONENTS opentelemetry) failed without naming what "
                      "to install:\n${err}")
endif()
message(STATUS "COMPONENTS opentelemetry without opentelemetry-cpp fails: ${CMAKE_MATCH_0}")

# 4. pkg-config.
set(ENV{PKG_CONFIG_LIBDIR} "${only_libpq}:${prefix_pc_path}")
set(ENV{PKG_CONFIG_PATH} "")
run("${PKG_CONFIG}" --cflags --libs dblock-postgresql dblock-cleaner)
string(STRIP "${last_output}" flags)
message(STATUS "pkg-config dblock-postgresql dblock-cleaner: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run("${CXX}" -std=c++20 "${CONSUMER_DIR}/postgresql/main.cpp" -o "${WORK_DIR}/pc-postgresql"
    ${flags})
expect_postgresql_only("${WORK_DIR}/pc-postgresql" "")
run("${WORK_DIR}/pc-postgresql")
message(STATUS "pkg-config PostgreSQL-only consumer:\n${last_output}")
execute_process(COMMAND "${PKG_CONFIG}" --exists dblock-mysql RESULT_VARIABLE rc)
if(rc EQUAL 0 AND EXISTS "${prefix_pc_path}/dblock-mysql.pc")
  message(FATAL_ERROR "pkg-config dblock-mysql resolves on a machine without libmariadb")
endif()

# Every module, with the machine's own pkg-config search path: no language standard forced,
# no library listed twice.
set(ENV{PKG_CONFIG_LIBDIR} "")
unset(ENV{PKG_CONFIG_LIBDIR})
set(ENV{PKG_CONFIG_PATH} "${prefix_pc_path}")
file(GLOB modules RELATIVE "${prefix_pc_path}" "${prefix_pc_path}/dblock*.pc")
foreach(module IN LISTS modules)
  string(REGEX REPLACE "\\.pc$" "" module "${module}")
  foreach(kind --cflags --libs)
    run("${PKG_CONFIG}" ${kind} ${module})
    string(STRIP "${last_output}" flags)
    if(flags MATCHES "-std=")
      message(FATAL_ERROR "pkg-config ${kind} ${module} forces a language standard: ${flags}")
    endif()
    separate_arguments(list UNIX_COMMAND "${flags}")
    set(seen "")
    foreach(flag IN LISTS list)
      if(flag MATCHES "^-l" AND flag IN_LIST seen)
        message(FATAL_ERROR "pkg-config ${kind} ${module} lists ${flag} twice: ${flags}")
      endif()
      list(APPEND seen "${flag}")
    endforeach()
  endforeach()
endforeach()
run("${PKG_CONFIG}" --cflags --libs dblock)
string(STRIP "${last_output}" flags)
message(STATUS "pkg-config dblock: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
set(defines "")
if(flags MATCHES "-ldblock_libpqxx")
  set(defines -DCONSUMER_HAS_LIBPQXX=1)
endif()
run("${CXX}" -std=c++20 ${defines} "${CONSUMER_DIR}/main.cpp" -o "${WORK_DIR}/pc-all" ${flags})
run("${WORK_DIR}/pc-all")
message(STATUS "pkg-config dblock consumer:\n${last_output}")
