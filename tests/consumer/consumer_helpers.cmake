# SPDX-License-Identifier: Apache-2.0
# Helpers of the package.* checks (check_consumer.cmake, check_vendored.cmake,
# check_shared.cmake).

# run(<command> <args>...): runs it, fails with its output when it fails; its standard output
# is left in last_output.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${rc}): ${command}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# The consumer sets no CMAKE_CXX_STANDARD, yet compiles as C++20: dblock's targets carry it.
function(expect_cxx20_from_dblock build_dir)
  file(GLOB_RECURSE flag_files "${build_dir}/CMakeFiles/consumer.dir/flags.make")
  file(READ "${flag_files}" flags)
  if(NOT flags MATCHES "-std=(c|gnu)\\+\\+(20|2a)")
    message(FATAL_ERROR "the consumer in ${build_dir} does not compile as C++20:\n${flags}")
  endif()
endfunction()

# A PostgreSQL-only program: links libpq, and neither a MySQL client, SOCI nor libpqxx (by ldd,
# and by its link command when one is given).
function(expect_postgresql_only binary link_file)
  run(ldd "${binary}")
  set(libs "${last_output}")
  if(NOT libs MATCHES "libpq\\.so")
    message(FATAL_ERROR "${binary} does not link libpq:\n${libs}")
  endif()
  if(libs MATCHES "(libmariadb|libmysqlclient|libsoci|libpqxx)[^ ]*")
    message(FATAL_ERROR "${binary} links ${CMAKE_MATCH_0}, which a PostgreSQL-only service "
                        "must not:\n${libs}")
  endif()
  if(link_file)
    file(READ "${link_file}" link)
    if(link MATCHES "(mariadb|mysqlclient|soci|pqxx)[^ ]*")
      message(FATAL_ERROR "the link command names ${CMAKE_MATCH_0}:\n${link}")
    endif()
  endif()
endfunction()
