# SPDX-License-Identifier: Apache-2.0
# What each dblock component needs, and how to find it. Used by the build (CMakeLists.txt) and by
# the installed dblockConfig.cmake, which looks only for what the requested components need, so a
# PostgreSQL-only service needs libpq and nothing of MySQL or SOCI.
#
#   dblock_component_needs(<component> <out-components> <out-dependencies>)
#       the dblock components and the outside dependencies one component builds on
#   dblock_find_dependency(<dependency>)
#       looks for one dependency (threads, json, libpq, libpqxx, mysql, soci, prometheus,
#       opentelemetry) and
#       wraps it in the target dblock::dep::<dependency>; sets dblock_dep_<dependency>_FOUND, and
#       dblock_dep_<dependency>_MISSING to what to install when it is not found
#
# Components: core (no driver), cleaner, postgresql (the libpq driver), libpqxx, mysql
# (libmysqlclient / MariaDB Connector/C), soci, prometheus (metrics from dblock's events over
# prometheus-cpp), opentelemetry (spans and metrics from dblock's events over opentelemetry-cpp's
# API).
include_guard(GLOBAL)

function(dblock_component_needs component out_components out_deps)
  set(components "")
  set(deps "")
  if(component STREQUAL "core")
    set(deps threads json)
  elseif(component STREQUAL "cleaner")
    set(components core)
  elseif(component STREQUAL "postgresql")
    set(components core)
    set(deps libpq)
  elseif(component STREQUAL "libpqxx")
    set(components postgresql)
    set(deps libpq libpqxx)
  elseif(component STREQUAL "mysql")
    set(components core)
    set(deps mysql)
  elseif(component STREQUAL "soci")
    set(components core)
    set(deps soci)
  elseif(component STREQUAL "prometheus")
    set(components core)
    set(deps prometheus)
  elseif(component STREQUAL "opentelemetry")
    set(components core)
    set(deps opentelemetry)
  else()
    message(FATAL_ERROR "dblock: unknown component '${component}'")
  endif()
  set(${out_components} "${components}" PARENT_SCOPE)
  set(${out_deps} "${deps}" PARENT_SCOPE)
endfunction()

# Only pkg-config knows libpqxx 6.4 and the MySQL client libraries.
macro(_dblock_need_pkg_config dep what)
  if(NOT PKG_CONFIG_FOUND)
    find_package(PkgConfig QUIET)
  endif()
  if(NOT PKG_CONFIG_FOUND)
    set(dblock_dep_${dep}_FOUND FALSE PARENT_SCOPE)
    set(dblock_dep_${dep}_MISSING "pkg-config (to find ${what}; Debian/Ubuntu: pkg-config)"
        PARENT_SCOPE)
    return()
  endif()
endmacro()

# dblock_pkg_config_target(<target> <prefix> <module>...): the pkg-config modules as an imported
# target, leaving out the include directories that do not exist (Debian 13's opentelemetry-cpp
# modules name /usr/lib/include: their prefix climbs two directories from a multiarch libdir);
# sets <prefix>_FOUND. pkg-config must have been found.
function(dblock_pkg_config_target target prefix)
  pkg_check_modules(${prefix} QUIET ${ARGN})
  set(${prefix}_FOUND "${${prefix}_FOUND}" PARENT_SCOPE)
  if(NOT ${prefix}_FOUND)
    return()
  endif()
  set(include_dirs "")
  foreach(dir IN LISTS ${prefix}_INCLUDE_DIRS)
    if(IS_DIRECTORY "${dir}")
      list(APPEND include_dirs "${dir}")
    endif()
  endforeach()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${include_dirs}"
    INTERFACE_COMPILE_OPTIONS "${${prefix}_CFLAGS_OTHER}"
    INTERFACE_LINK_LIBRARIES "${${prefix}_LINK_LIBRARIES}")
endfunction()

function(dblock_find_dependency dep)
  if(TARGET dblock::dep::${dep})
    set(dblock_dep_${dep}_FOUND TRUE PARENT_SCOPE)
    set(dblock_dep_${dep}_MISSING "" PARENT_SCOPE)
    return()
  endif()
  set(dblock_dep_${dep}_FOUND FALSE PARENT_SCOPE)

  if(dep STREQUAL "threads")
    find_package(Threads QUIET)
    if(NOT Threads_FOUND)
      set(dblock_dep_${dep}_MISSING "a POSIX threads library" PARENT_SCOPE)
      return()
    endif()
    add_library(dblock::dep::threads INTERFACE IMPORTED GLOBAL)
    target_link_libraries(dblock::dep::threads INTERFACE Threads::Threads)

  elseif(dep STREQUAL "json")
    find_package(nlohmann_json 3.2 QUIET CONFIG)
    if(NOT nlohmann_json_FOUND)
      set(dblock_dep_${dep}_MISSING "nlohmann/json 3.2 or later (Debian/Ubuntu: nlohmann-json3-dev)"
          PARENT_SCOPE)
      return()
    endif()
    add_library(dblock::dep::json INTERFACE IMPORTED GLOBAL)
    target_link_libraries(dblock::dep::json INTERFACE nlohmann_json::nlohmann_json)

  elseif(dep STREQUAL "libpq")
    # CMake's own FindPostgreSQL (client library and headers only), else libpq's pkg-config file.
    find_package(PostgreSQL QUIET)
    if(PostgreSQL_FOUND)
      add_library(dblock::dep::libpq INTERFACE IMPORTED GLOBAL)
      set_target_properties(dblock::dep::libpq PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${PostgreSQL_INCLUDE_DIRS}"
        INTERFACE_LINK_LIBRARIES "${PostgreSQL_LIBRARIES}")
    else()
      find_package(PkgConfig QUIET)
      if(PKG_CONFIG_FOUND)
        pkg_check_modules(dblock_LIBPQ QUIET IMPORTED_TARGET GLOBAL libpq)
      endif()
      if(NOT dblock_LIBPQ_FOUND)
        set(dblock_dep_${dep}_MISSING
            "libpq and its headers (Debian/Ubuntu: libpq-dev; Fedora: libpq-devel)" PARENT_SCOPE)
        return()
      endif()
      add_library(dblock::dep::libpq INTERFACE IMPORTED GLOBAL)
      target_link_libraries(dblock::dep::libpq INTERFACE PkgConfig::dblock_LIBPQ)
    endif()

  elseif(dep STREQUAL "libpqxx")
    _dblock_need_pkg_config(${dep} libpqxx)
    pkg_check_modules(dblock_PQXX QUIET IMPORTED_TARGET GLOBAL libpqxx)
    if(NOT dblock_PQXX_FOUND)
      set(dblock_dep_${dep}_MISSING
          "libpqxx 6.4 or later (Debian/Ubuntu: libpqxx-dev; Fedora: libpqxx-devel)" PARENT_SCOPE)
      return()
    endif()
    add_library(dblock::dep::libpqxx INTERFACE IMPORTED GLOBAL)
    target_link_libraries(dblock::dep::libpqxx INTERFACE PkgConfig::dblock_PQXX)

  elseif(dep STREQUAL "mysql")
    # The libmysqlclient API: MariaDB Connector/C (libmariadb) or MySQL's own mysqlclient.
    _dblock_need_pkg_config(${dep} "the MySQL client library")
    pkg_check_modules(dblock_MYSQL QUIET IMPORTED_TARGET GLOBAL libmariadb)
    set(pc libmariadb)
    if(NOT dblock_MYSQL_FOUND)
      pkg_check_modules(dblock_MYSQL QUIET IMPORTED_TARGET GLOBAL mysqlclient)
      set(pc mysqlclient)
    endif()
    if(NOT dblock_MYSQL_FOUND)
      set(dblock_dep_${dep}_MISSING
          "MariaDB Connector/C or MySQL's client library with headers (Debian/Ubuntu: libmariadb-dev)"
          PARENT_SCOPE)
      return()
    endif()
    set(dblock_MYSQL_PC ${pc} CACHE INTERNAL "pkg-config module of the MySQL client library")
    add_library(dblock::dep::mysql INTERFACE IMPORTED GLOBAL)
    target_link_libraries(dblock::dep::mysql INTERFACE PkgConfig::dblock_MYSQL)

  elseif(dep STREQUAL "soci")
    # SOCI 4 with its PostgreSQL and MySQL backends. Debian ships neither a CMake config nor a
    # pkg-config file for it; its headers include Boost and the libpq / MySQL client headers.
    dblock_find_dependency(libpq)
    dblock_find_dependency(mysql)
    find_path(dblock_SOCI_INCLUDE_DIR soci/soci.h)
    find_library(dblock_SOCI_CORE soci_core)
    find_library(dblock_SOCI_POSTGRESQL soci_postgresql)
    find_library(dblock_SOCI_MYSQL soci_mysql)
    find_path(dblock_BOOST_INCLUDE_DIR boost/optional.hpp)
    if(NOT (dblock_SOCI_INCLUDE_DIR AND dblock_SOCI_CORE AND dblock_SOCI_POSTGRESQL
            AND dblock_SOCI_MYSQL AND dblock_BOOST_INCLUDE_DIR AND dblock_dep_libpq_FOUND
            AND dblock_dep_mysql_FOUND))
      string(CONCAT missing "SOCI 4 with its PostgreSQL and MySQL backends, Boost's headers, "
             "libpq and the MySQL client library (Debian/Ubuntu: libsoci-dev libboost-dev "
             "libpq-dev libmariadb-dev)")
      set(dblock_dep_${dep}_MISSING "${missing}" PARENT_SCOPE)
      return()
    endif()
    add_library(dblock::dep::soci INTERFACE IMPORTED GLOBAL)
    target_include_directories(dblock::dep::soci SYSTEM INTERFACE "${dblock_SOCI_INCLUDE_DIR}"
                               "${dblock_BOOST_INCLUDE_DIR}")
    target_link_libraries(dblock::dep::soci INTERFACE "${dblock_SOCI_POSTGRESQL}"
                          "${dblock_SOCI_MYSQL}" "${dblock_SOCI_CORE}" dblock::dep::libpq
                          dblock::dep::mysql ${CMAKE_DL_LIBS})

  elseif(dep STREQUAL "prometheus")
    # prometheus-cpp's core library (the registry, metrics and text serializer); its pull and
    # push parts are not used. No version asked: Debian's package has no version file.
    find_package(prometheus-cpp QUIET CONFIG)
    if(NOT prometheus-cpp_FOUND OR NOT TARGET prometheus-cpp::core)
      set(dblock_dep_${dep}_MISSING "prometheus-cpp 1.0 or later (Debian/Ubuntu: prometheus-cpp-dev)"
          PARENT_SCOPE)
      return()
    endif()
    add_library(dblock::dep::prometheus INTERFACE IMPORTED GLOBAL)
    target_link_libraries(dblock::dep::prometheus INTERFACE prometheus-cpp::core)

  elseif(dep STREQUAL "opentelemetry")
    # opentelemetry-cpp's API, which is header-only (the service brings the SDK): its CMake
    # package, else its pkg-config module. Debian 13's CMake package also looks for gRPC and
    # Protobuf, whose development files its package does not pull; the pkg-config module needs
    # only Abseil's (the API's headers include them there).
    find_package(opentelemetry-cpp QUIET CONFIG)
    if(opentelemetry-cpp_FOUND AND TARGET opentelemetry-cpp::api)
      add_library(dblock::dep::opentelemetry INTERFACE IMPORTED GLOBAL)
      target_link_libraries(dblock::dep::opentelemetry INTERFACE opentelemetry-cpp::api)
    else()
      string(CONCAT missing "opentelemetry-cpp 1.10 or later with the headers its API includes "
             "(Debian 13 and later: opentelemetry-cpp-dev libabsl-dev)")
      if(NOT PKG_CONFIG_FOUND)
        find_package(PkgConfig QUIET)
      endif()
      if(PKG_CONFIG_FOUND)
        # Its Cflags define what the library was built with (HAVE_ABSEIL, the ABI version): the
        # API's types differ without them.
        dblock_pkg_config_target(dblock::dep::opentelemetry dblock_OTEL "opentelemetry_api>=1.10")
      endif()
      if(NOT dblock_OTEL_FOUND)
        set(dblock_dep_${dep}_MISSING "${missing}" PARENT_SCOPE)
        return()
      endif()
    endif()

  else()
    message(FATAL_ERROR "dblock: unknown dependency '${dep}'")
  endif()
  set(dblock_dep_${dep}_FOUND TRUE PARENT_SCOPE)
  set(dblock_dep_${dep}_MISSING "" PARENT_SCOPE)
endfunction()
