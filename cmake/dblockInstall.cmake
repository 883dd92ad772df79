# SPDX-License-Identifier: Apache-2.0
# Install rules. Two install components, one per Debian package (cmake/dblockPackaging.cmake):
#   dev  libraries, public headers, the CMake package (find_package(dblock)), pkg-config files
#   cli  the dblock program, its man pages and bash completion, the schema and migrations as
#        SQL files, the systemd examples
# `cmake --install build` installs both.
include(CMakePackageConfigHelpers)

option(DBLOCK_INSTALL_ARCHIVES
       "With BUILD_SHARED_LIBS=ON, also install static archives of the same objects" OFF)

set(dblock_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/dblock")
set(dblock_pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# Libraries: one export set per component, so find_package(dblock COMPONENTS postgresql) loads
# the targets of postgresql and core only.
foreach(component IN LISTS dblock_components)
  install(TARGETS dblock_${component}
          EXPORT dblock-${component}-targets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev NAMELINK_COMPONENT dev
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT dev
          INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT dblock-${component}-targets NAMESPACE dblock:: DESTINATION "${dblock_cmake_dir}"
          COMPONENT dev)
  if(BUILD_SHARED_LIBS AND DBLOCK_INSTALL_ARCHIVES)
    set_target_properties(dblock_${component}_internal PROPERTIES
      EXCLUDE_FROM_ALL OFF OUTPUT_NAME dblock_${component})
    install(TARGETS dblock_${component}_internal ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            COMPONENT dev)
  endif()
endforeach()
install(TARGETS dblock EXPORT dblock-targets)
# The drivers' keep files (INTERFACE_SOURCES of their targets; see dblockComponents.cmake).
get_property(dblock_keep_files GLOBAL PROPERTY DBLOCK_KEEP_FILES)
install(FILES ${dblock_keep_files} DESTINATION "${CMAKE_INSTALL_DATADIR}/dblock/link" COMPONENT dev)
install(EXPORT dblock-targets NAMESPACE dblock:: DESTINATION "${dblock_cmake_dir}" COMPONENT dev)

# Public headers: the core ones always, each driver's own header (and the prometheus and
# opentelemetry components') only when that component is built.
set(dblock_driver_headers libpq.hpp libpqxx.hpp libmysqlclient.hpp soci.hpp prometheus.hpp
                          opentelemetry.hpp)
file(GLOB dblock_all_headers RELATIVE "${PROJECT_SOURCE_DIR}/lib/include/dblock"
     "${PROJECT_SOURCE_DIR}/lib/include/dblock/*.hpp")
set(dblock_headers_to_install "${PROJECT_BINARY_DIR}/include/dblock/version.hpp")
foreach(h IN LISTS dblock_all_headers)
  if(NOT h IN_LIST dblock_driver_headers)
    list(APPEND dblock_headers_to_install "${PROJECT_SOURCE_DIR}/lib/include/dblock/${h}")
  endif()
endforeach()
foreach(pair LIBPQ:libpq LIBPQXX:libpqxx MYSQL:libmysqlclient SOCI:soci PROMETHEUS:prometheus
             OPENTELEMETRY:opentelemetry)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 driver)
  list(GET pair 1 header)
  if(dblock_HAVE_${driver})
    list(APPEND dblock_headers_to_install "${PROJECT_SOURCE_DIR}/lib/include/dblock/${header}.hpp")
  endif()
endforeach()
install(FILES ${dblock_headers_to_install} DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/dblock"
        COMPONENT dev)

# The CMake package.
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/dblockConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/dblockConfig.cmake"
                              INSTALL_DESTINATION "${dblock_cmake_dir}")
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(dblock_compatibility SameMinorVersion)
else()
  set(dblock_compatibility SameMajorVersion)
endif()
write_basic_package_version_file("${PROJECT_BINARY_DIR}/dblockConfigVersion.cmake"
                                 COMPATIBILITY ${dblock_compatibility})
install(FILES "${PROJECT_BINARY_DIR}/dblockConfig.cmake"
              "${PROJECT_BINARY_DIR}/dblockConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/dblockDependencies.cmake"
        DESTINATION "${dblock_cmake_dir}" COMPONENT dev)

# pkg-config: one module per component (dblock-core, dblock-cleaner, dblock-postgresql, ...) and
# dblock for everything built. No Cflags for the language standard: users compile with -std=c++20 (docs/install.md).
# Relocatable: the prefix is found from the .pc file's own directory.
string(REGEX REPLACE "[^/]+" ".." dblock_pc_up "${dblock_pc_dir}")
# Core's public headers include nlohmann/json's today (LockOptions::metadata).
set(dblock_pc_core_requires "nlohmann_json")

# dblock_write_pc(<module> <description> <libs> <requires> <requires.private> <libs.private>
#                 <cflags>): what only the library needs goes in <requires.private> and
# <libs.private>, which a static build lists with the rest (its users link everything).
function(dblock_write_pc module description libs requires requires_private libs_private cflags)
  set(text "prefix=\${pcfiledir}/${dblock_pc_up}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}

Name: ${module}
Description: ${description}
Version: ${PROJECT_VERSION}
")
  if(BUILD_SHARED_LIBS)
    set(fields Requires "${requires}" Requires.private "${requires_private}"
               Cflags "-I\${includedir}${cflags}" Libs "${libs}" Libs.private "${libs_private}")
  else()
    set(fields Requires "${requires} ${requires_private}" Cflags "-I\${includedir}${cflags}"
               Libs "${libs} ${libs_private}")
  endif()
  while(fields)
    list(POP_FRONT fields field value)
    string(REGEX REPLACE "  +" " " value "${value}")
    string(STRIP "${value}" value)
    if(field STREQUAL "Libs" AND value)
      set(value "-L\${libdir} ${value}")
    endif()
    if(value)
      string(APPEND text "${field}: ${value}\n")
    endif()
  endwhile()
  file(WRITE "${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc" "${text}")
  install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/${module}.pc" DESTINATION "${dblock_pc_dir}"
          COMPONENT dev)
endfunction()

# Each component's module: its own library, the dblock modules it builds on, and its outside
# dependencies.
set(dblock_pc_libs_core "-ldblock_core -pthread")
set(dblock_pc_ext_core "${dblock_pc_core_requires}")
set(dblock_pc_ext_private_core "")
set(dblock_pc_libs_cleaner "-ldblock_cleaner")
# A driver's library, and what keeps its registration with open_connection() in the link:
# -u <anchor> for a static archive; for a shared library, --no-as-needed (a library whose
# symbols no code calls is dropped by --as-needed, the default of Debian's and Ubuntu's GCC).
function(dblock_pc_driver_libs out library anchor)
  if(BUILD_SHARED_LIBS)
    set(${out} "-Wl,--no-as-needed -l${library} -Wl,-u,${anchor}" PARENT_SCOPE)
  else()
    set(${out} "-l${library} -Wl,-u,${anchor}" PARENT_SCOPE)
  endif()
endfunction()
dblock_pc_driver_libs(dblock_pc_libs_postgresql dblock_postgresql dblock_driver_libpq)
set(dblock_pc_ext_private_postgresql "libpq")
dblock_pc_driver_libs(dblock_pc_libs_libpqxx dblock_libpqxx dblock_driver_libpqxx)
set(dblock_pc_ext_libpqxx "libpqxx libpq")
dblock_pc_driver_libs(dblock_pc_libs_mysql dblock_mysql dblock_driver_libmysqlclient)
set(dblock_pc_ext_mysql "${dblock_MYSQL_PC}")
set(dblock_pc_libs_soci "")
if(dblock_HAVE_SOCI)
  # SOCI has no pkg-config file on Debian: its libraries and headers by path.
  get_filename_component(dblock_soci_libdir "${dblock_SOCI_CORE}" DIRECTORY)
  dblock_pc_driver_libs(dblock_pc_libs_soci dblock_soci dblock_driver_soci)
  if(NOT dblock_soci_libdir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    string(APPEND dblock_pc_libs_soci " -L${dblock_soci_libdir}")
  endif()
  string(APPEND dblock_pc_libs_soci " -lsoci_postgresql -lsoci_mysql -lsoci_core")
  set(dblock_pc_libs_private_soci "-l${CMAKE_DL_LIBS}")
  set(dblock_pc_ext_soci "libpq ${dblock_MYSQL_PC}")
  set(dblock_pc_cflags_soci "")
  foreach(dir IN ITEMS "${dblock_SOCI_INCLUDE_DIR}" "${dblock_BOOST_INCLUDE_DIR}")
    if(NOT dir MATCHES "^/usr/include/?$")
      string(APPEND dblock_pc_cflags_soci " -I${dir}")
    endif()
  endforeach()
endif()
# The metrics: prometheus-cpp's core library, whose Registry its users make.
set(dblock_pc_libs_prometheus "-ldblock_prometheus")
set(dblock_pc_ext_prometheus "prometheus-cpp-core")
# The spans and metrics: opentelemetry-cpp's API (header-only), whose providers its users make.
set(dblock_pc_libs_opentelemetry "-ldblock_opentelemetry")
set(dblock_pc_ext_opentelemetry "opentelemetry_api")
set(dblock_pc_description_core "dblock: locks, the migrator and open_connection() (no driver)")
set(dblock_pc_description_cleaner "dblock: the expired-lock cleaner")
set(dblock_pc_description_postgresql "dblock: the PostgreSQL driver over libpq")
set(dblock_pc_description_libpqxx "dblock: the PostgreSQL driver over libpqxx")
set(dblock_pc_description_mysql "dblock: the MySQL/MariaDB driver over libmysqlclient")
set(dblock_pc_description_soci "dblock: the SOCI driver (PostgreSQL and MySQL backends)")
set(dblock_pc_description_prometheus "dblock: Prometheus metrics of dblock's events")
set(dblock_pc_description_opentelemetry "dblock: OpenTelemetry spans and metrics of dblock's events")
foreach(component IN LISTS dblock_components)
  dblock_component_needs(${component} needs_components needs_deps)
  set(requires "")
  foreach(c IN LISTS needs_components)
    string(APPEND requires " dblock-${c}")
  endforeach()
  dblock_write_pc(dblock-${component} "${dblock_pc_description_${component}}"
                  "${dblock_pc_libs_${component}}" "${requires} ${dblock_pc_ext_${component}}"
                  "${dblock_pc_ext_private_${component}}" "${dblock_pc_libs_private_${component}}"
                  "${dblock_pc_cflags_${component}}")
endforeach()

# dblock: every component, its libraries named once each in link order (dependents first), and
# each outside module once.
set(libs "")
set(ext "")
set(ext_private "")
set(libs_private "")
set(cflags "")
set(reversed ${dblock_components})
list(REVERSE reversed)
foreach(component IN LISTS reversed)
  string(APPEND libs " ${dblock_pc_libs_${component}}")
  string(APPEND libs_private " ${dblock_pc_libs_private_${component}}")
  string(APPEND cflags "${dblock_pc_cflags_${component}}")
  separate_arguments(more UNIX_COMMAND "${dblock_pc_ext_${component}}")
  list(APPEND ext ${more})
  separate_arguments(more UNIX_COMMAND "${dblock_pc_ext_private_${component}}")
  list(APPEND ext_private ${more})
endforeach()
list(REMOVE_DUPLICATES ext)
if(ext AND ext_private)
  list(REMOVE_ITEM ext_private ${ext})
endif()
list(REMOVE_DUPLICATES ext_private)
list(JOIN ext " " ext)
list(JOIN ext_private " " ext_private)
dblock_write_pc(dblock "${PROJECT_DESCRIPTION} (every component built)" "${libs}" "${ext}"
                "${ext_private}" "${libs_private}" "${cflags}")

# For the database: the full current schema and the numbered migrations, as SQL files, for
# teams that apply DDL with their own tool (Flyway, Liquibase, sqitch).
install(FILES "${PROJECT_SOURCE_DIR}/schema/postgresql.sql" "${PROJECT_SOURCE_DIR}/schema/mysql.sql"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/dblock/schema" COMPONENT cli)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/migrations/"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/dblock/migrations" COMPONENT cli
        FILES_MATCHING PATTERN "*.sql")

# The program's manual, completion and systemd examples.
if(DBLOCK_BUILD_CLI)
  file(GLOB dblock_man_pages "${PROJECT_SOURCE_DIR}/man/*.1")
  install(FILES ${dblock_man_pages} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT cli)
  install(FILES "${PROJECT_SOURCE_DIR}/contrib/bash-completion/dblock"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" COMPONENT cli)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/contrib/systemd/"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/dblock/examples/systemd" COMPONENT cli)
endif()

# Licence, notice and changes, with each package.
foreach(component cli dev)
  if(component STREQUAL "cli")
    set(doc_dir "${CMAKE_INSTALL_DATADIR}/doc/dblock")
  else()
    set(doc_dir "${CMAKE_INSTALL_DATADIR}/doc/libdblock-dev")
  endif()
  install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/NOTICE"
                "${PROJECT_SOURCE_DIR}/CHANGELOG.md"
          DESTINATION "${doc_dir}" COMPONENT ${component})
endforeach()
