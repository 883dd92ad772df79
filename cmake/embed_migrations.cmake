# SPDX-License-Identifier: Apache-2.0
# Writes a C++ file holding every migrations/<dialect>/NNNN_name.sql as a string literal.
# Run with -D SOURCE_DIR=<migrations dir> -D OUTPUT=<file.cpp>.
file(GLOB files RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/*/*.sql")
list(SORT files)
set(body "")
foreach(rel IN LISTS files)
  file(READ "${SOURCE_DIR}/${rel}" text)
  if(text MATCHES "\\)dblock_sql\"")
    message(FATAL_ERROR "${rel} contains the raw-string delimiter )dblock_sql\"")
  endif()
  string(APPEND body "    {\"${rel}\", R\"dblock_sql(${text})dblock_sql\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated from migrations/ by cmake/embed_migrations.cmake. Do not edit.
#include \"migrations.hpp\"

namespace dblock::detail {

const std::vector<EmbeddedFile>& embedded_migration_files() {
  static const std::vector<EmbeddedFile> files = {
${body}  };
  return files;
}

}  // namespace dblock::detail
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
