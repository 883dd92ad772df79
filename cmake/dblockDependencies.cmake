# Finds dblock's dependencies and wraps each in a dblock::dep::<name> INTERFACE target.
# Used both by the build and by the installed dblockConfig.cmake, so a consumer resolves the
# same dependencies the same way. Expects dblock_WANT_<DRIVER> / DBLOCK_WITH_<DRIVER> values of
# AUTO, ON or OFF; sets dblock_HAVE_<DRIVER> to ON or OFF.

include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.2 REQUIRED CONFIG)

function(_dblock_driver_wanted name out)
  if(DEFINED DBLOCK_WITH_${name})
    set(${out} "${DBLOCK_WITH_${name}}" PARENT_SCOPE)
  else()
    set(${out} AUTO PARENT_SCOPE)
  endif()
endfunction()

function(_dblock_driver_result name found)
  _dblock_driver_wanted(${name} want)
  if(want STREQUAL "OFF")
    set(dblock_HAVE_${name} OFF PARENT_SCOPE)
  elseif(found)
    set(dblock_HAVE_${name} ON PARENT_SCOPE)
  elseif(want STREQUAL "ON")
    message(FATAL_ERROR "dblock: DBLOCK_WITH_${name}=ON but its library was not found; "
                        "run scripts/install-deps.sh")
  else()
    set(dblock_HAVE_${name} OFF PARENT_SCOPE)
  endif()
endfunction()

# libpq + libpqxx (Debian's libpqxx 6.4 ships only a pkg-config file).
pkg_check_modules(dblock_PQXX QUIET IMPORTED_TARGET GLOBAL libpqxx libpq)
_dblock_driver_result(LIBPQXX "${dblock_PQXX_FOUND}")
if(dblock_HAVE_LIBPQXX AND NOT TARGET dblock::dep::libpqxx)
  add_library(dblock::dep::libpqxx INTERFACE IMPORTED GLOBAL)
  target_link_libraries(dblock::dep::libpqxx INTERFACE PkgConfig::dblock_PQXX)
endif()

# libmysqlclient API: MariaDB Connector/C (libmariadb) or MySQL's mysqlclient.
set(dblock_MYSQL_PC libmariadb)
pkg_check_modules(dblock_MYSQL QUIET IMPORTED_TARGET GLOBAL libmariadb)
if(NOT dblock_MYSQL_FOUND)
  set(dblock_MYSQL_PC mysqlclient)
  pkg_check_modules(dblock_MYSQL QUIET IMPORTED_TARGET GLOBAL mysqlclient)
endif()
_dblock_driver_result(MYSQL "${dblock_MYSQL_FOUND}")
if(dblock_HAVE_MYSQL AND NOT TARGET dblock::dep::mysql)
  add_library(dblock::dep::mysql INTERFACE IMPORTED GLOBAL)
  target_link_libraries(dblock::dep::mysql INTERFACE PkgConfig::dblock_MYSQL)
endif()

# SOCI 4: Debian ships neither a CMake config nor a pkg-config file. Its headers include Boost
# and the libpq / MariaDB client headers, so both client libraries must be present as well.
find_path(dblock_SOCI_INCLUDE_DIR soci/soci.h)
find_library(dblock_SOCI_CORE soci_core)
find_library(dblock_SOCI_POSTGRESQL soci_postgresql)
find_library(dblock_SOCI_MYSQL soci_mysql)
find_path(dblock_BOOST_INCLUDE_DIR boost/optional.hpp)
pkg_check_modules(dblock_SOCI_LIBPQ QUIET IMPORTED_TARGET GLOBAL libpq)
set(_dblock_soci_found OFF)
if(dblock_SOCI_INCLUDE_DIR AND dblock_SOCI_CORE AND dblock_SOCI_POSTGRESQL AND dblock_SOCI_MYSQL
   AND dblock_BOOST_INCLUDE_DIR AND dblock_SOCI_LIBPQ_FOUND AND dblock_MYSQL_FOUND)
  set(_dblock_soci_found ON)
endif()
_dblock_driver_result(SOCI "${_dblock_soci_found}")
if(dblock_HAVE_SOCI AND NOT TARGET dblock::dep::soci)
  add_library(dblock::dep::soci INTERFACE IMPORTED GLOBAL)
  target_include_directories(dblock::dep::soci SYSTEM INTERFACE ${dblock_SOCI_INCLUDE_DIR}
                             ${dblock_BOOST_INCLUDE_DIR})
  target_link_libraries(dblock::dep::soci INTERFACE ${dblock_SOCI_POSTGRESQL} ${dblock_SOCI_MYSQL}
                        ${dblock_SOCI_CORE} PkgConfig::dblock_SOCI_LIBPQ PkgConfig::dblock_MYSQL
                        ${CMAKE_DL_LIBS})
endif()
