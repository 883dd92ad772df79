# SPDX-License-Identifier: Apache-2.0
# Fails listing every C++ file that clang-format would change.
file(GLOB_RECURSE files "${SOURCE_DIR}/lib/*.cpp" "${SOURCE_DIR}/lib/*.hpp" "${SOURCE_DIR}/cli/*.cpp"
     "${SOURCE_DIR}/cli/*.hpp" "${SOURCE_DIR}/tests/*.cpp" "${SOURCE_DIR}/tests/*.hpp"
     "${SOURCE_DIR}/examples/*.cpp" "${SOURCE_DIR}/examples/*.hpp" "${SOURCE_DIR}/cleaner/*.cpp"
     "${SOURCE_DIR}/cleaner/*.hpp" "${SOURCE_DIR}/bench/*.cpp" "${SOURCE_DIR}/bench/*.hpp")
# One clang-format for all the files (one per file spent most of its time starting up); the
# files it would change are read from its messages ("<file>:<line>:<col>: error: ...").
execute_process(COMMAND "${CLANG_FORMAT}" --dry-run --Werror ${files} RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE messages)
set(bad "")
if(NOT rc EQUAL 0)
  string(REGEX MATCHALL "[^\n]+:[0-9]+:[0-9]+: (error|warning):" located "${messages}")
  foreach(line IN LISTS located)
    string(REGEX REPLACE ":[0-9]+:[0-9]+: (error|warning):$" "" f "${line}")
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    list(APPEND bad "${rel}")
  endforeach()
  list(REMOVE_DUPLICATES bad)
  if(NOT bad)
    message(FATAL_ERROR "clang-format failed (${rc}):\n${messages}")
  endif()
endif()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "not clang-formatted (run clang-format -i on them):\n  ${text}")
endif()
list(LENGTH files n)
message(STATUS "${n} files clang-formatted")
