# SPDX-License-Identifier: Apache-2.0
# Fails listing every C++ file that clang-format would change.
file(GLOB_RECURSE files "${SOURCE_DIR}/lib/*.cpp" "${SOURCE_DIR}/lib/*.hpp" "${SOURCE_DIR}/cli/*.cpp"
     "${SOURCE_DIR}/cli/*.hpp" "${SOURCE_DIR}/tests/*.cpp" "${SOURCE_DIR}/tests/*.hpp"
     "${SOURCE_DIR}/examples/*.cpp" "${SOURCE_DIR}/examples/*.hpp" "${SOURCE_DIR}/cleaner/*.cpp"
     "${SOURCE_DIR}/cleaner/*.hpp" "${SOURCE_DIR}/bench/*.cpp" "${SOURCE_DIR}/bench/*.hpp")
set(bad "")
foreach(f IN LISTS files)
  execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror "${f}" RESULT_VARIABLE rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    list(APPEND bad "${rel}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "not clang-formatted (run clang-format -i on them):\n  ${text}")
endif()
list(LENGTH files n)
message(STATUS "${n} files clang-formatted")
