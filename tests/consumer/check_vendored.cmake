# SPDX-License-Identifier: Apache-2.0
# package.vendored: a service vendors dblock's source tree with FetchContent and dblock's default
# options. Its build has dblock's libraries and no dblock program, tests or examples; it links
# the PostgreSQL driver and the cleaner and runs; its `cmake --install` installs the service
# only. Run with -D SOURCE_DIR= -D CONSUMER_DIR= -D WORK_DIR= -D CXX= [-D LAUNCHER=].
cmake_minimum_required(VERSION 3.20)  # policies of today (IN_LIST) in script mode
include("${CMAKE_CURRENT_LIST_DIR}/consumer_helpers.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
set(args "-DDBLOCK_SOURCE_DIR=${SOURCE_DIR}" "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE=)
if(LAUNCHER)
  list(APPEND args "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
run("${CMAKE_COMMAND}" -S "${CONSUMER_DIR}/vendored" -B "${WORK_DIR}/build" ${args})

run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --target help)
foreach(target dblock_cli dblock_unit_tests dblock_integration_tests quickstart)
  if(last_output MATCHES "[^a-z_]${target}[^a-z_]")
    message(FATAL_ERROR "a vendored dblock defines ${target} by default:\n${last_output}")
  endif()
endforeach()

# The service and what it links (dblock's other libraries are built by `all` only).
run("${CMAKE_COMMAND}" --build "${WORK_DIR}/build" --target consumer --parallel 2)
expect_cxx20_from_dblock("${WORK_DIR}/build")
expect_postgresql_only("${WORK_DIR}/build/consumer"
                       "${WORK_DIR}/build/CMakeFiles/consumer.dir/link.txt")
run("${WORK_DIR}/build/consumer")
message(STATUS "vendored consumer:\n${last_output}")

run("${CMAKE_COMMAND}" --install "${WORK_DIR}/build" --prefix "${WORK_DIR}/prefix")
file(GLOB_RECURSE installed RELATIVE "${WORK_DIR}/prefix" "${WORK_DIR}/prefix/*")
if(NOT installed STREQUAL "bin/consumer")
  message(FATAL_ERROR "the service's install holds more than the service: ${installed}")
endif()
message(STATUS "the service's install holds: ${installed}")
