# SPDX-License-Identifier: Apache-2.0
# How dblock's libraries are built: one library per component (dblock::core, dblock::cleaner,
# dblock::postgresql, dblock::libpqxx, dblock::mysql, dblock::soci, dblock::prometheus,
# dblock::opentelemetry), each
# compiled once into an object library and linked from those objects into
#   dblock_<component>           the library users link (static, or shared with
#                                BUILD_SHARED_LIBS=ON: versioned soname, hidden symbols)
#   dblock_<component>_internal  a static archive of the same objects for dblock's own tests,
#                                benchmark and CLI, which call internals a shared library does not
#                                export (in a static build it is the library itself)
# Also decides which drivers this build has (dblock_HAVE_LIBPQ, _LIBPQXX, _MYSQL, _SOCI) and
# whether it has the Prometheus metrics (dblock_HAVE_PROMETHEUS) and the OpenTelemetry spans
# and metrics (dblock_HAVE_OPENTELEMETRY).

# Shared libraries: the soname changes whenever the ABI may. While the major version is 0 every
# minor release may break it, so the soname carries major.minor (libdblock_core.so.0.1); from
# 1.0 on it carries the major version only (libdblock_core.so.1).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(dblock_soversion "0.${PROJECT_VERSION_MINOR}")
else()
  set(dblock_soversion "${PROJECT_VERSION_MAJOR}")
endif()

# The warnings every dblock target compiles with (not passed on to users of the targets).
function(dblock_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                         -Wconversion -Wno-sign-conversion $<$<BOOL:${DBLOCK_WERROR}>:-Werror>)
endfunction()

# <dblock/version.hpp>, generated from project(VERSION).
configure_file("${PROJECT_SOURCE_DIR}/cmake/version.hpp.in"
               "${PROJECT_BINARY_DIR}/include/dblock/version.hpp" @ONLY)

# Core's own dependencies are required; each driver is built when its libraries are found
# (AUTO), must be (ON) or is left out (OFF).
foreach(dep threads json)
  dblock_find_dependency(${dep})
  if(NOT dblock_dep_${dep}_FOUND)
    message(FATAL_ERROR "dblock needs ${dblock_dep_${dep}_MISSING}; "
                        "scripts/install-deps.sh installs every dependency on Debian")
  endif()
endforeach()

# dblock_decide_driver(<WITH name> <component>): sets dblock_HAVE_<name>.
function(dblock_decide_driver name component)
  set(want "${DBLOCK_WITH_${name}}")
  if(NOT want MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "DBLOCK_WITH_${name} is '${want}'; use AUTO, ON or OFF")
  endif()
  set(have OFF)
  if(NOT want STREQUAL "OFF")
    dblock_component_needs(${component} needed_components needed_deps)
    set(missing "")
    foreach(c IN LISTS needed_components)
      if(c STREQUAL "postgresql" AND NOT dblock_HAVE_LIBPQ)
        list(APPEND missing "the libpq driver (DBLOCK_WITH_LIBPQ)")
      endif()
    endforeach()
    foreach(dep IN LISTS needed_deps)
      dblock_find_dependency(${dep})
      if(NOT dblock_dep_${dep}_FOUND)
        list(APPEND missing "${dblock_dep_${dep}_MISSING}")
      endif()
    endforeach()
    if(missing STREQUAL "")
      set(have ON)
    elseif(want STREQUAL "ON")
      list(JOIN missing "; " missing_text)
      message(FATAL_ERROR "DBLOCK_WITH_${name}=ON, but the ${component} component needs: "
                          "${missing_text} (scripts/install-deps.sh installs them on the Debian "
                          "releases that package them)")
    endif()
  endif()
  set(dblock_HAVE_${name} ${have} PARENT_SCOPE)
endfunction()
dblock_decide_driver(LIBPQ postgresql)
dblock_decide_driver(LIBPQXX libpqxx)
dblock_decide_driver(MYSQL mysql)
dblock_decide_driver(SOCI soci)
# Not a driver, but built on the same terms: when prometheus-cpp is found (AUTO), must be (ON),
# or never (OFF).
dblock_decide_driver(PROMETHEUS prometheus)
# The same for opentelemetry-cpp's API.
dblock_decide_driver(OPENTELEMETRY opentelemetry)

# The components this build has, in dependency order.
set(dblock_components core cleaner)
foreach(pair LIBPQ:postgresql LIBPQXX:libpqxx MYSQL:mysql SOCI:soci PROMETHEUS:prometheus
             OPENTELEMETRY:opentelemetry)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 driver)
  list(GET pair 1 component)
  if(dblock_HAVE_${driver})
    list(APPEND dblock_components ${component})
  endif()
endforeach()

# Gives a target DBLOCK_HAVE_<driver>=1 for each driver built (the tests instantiate their
# database x driver pairs from these).
function(dblock_driver_definitions target)
  foreach(driver LIBPQ LIBPQXX MYSQL SOCI)
    if(dblock_HAVE_${driver})
      target_compile_definitions(${target} PRIVATE DBLOCK_HAVE_${driver}=1)
    endif()
  endforeach()
endfunction()

# lib/src as an include directory: for the code that includes the library's internal headers
# (sql/server_sql.hpp, renewer.hpp, drivers/error_mapping.hpp, ...), that is the libraries' own
# sources and dblock's tests and benchmark, which link it beside the libraries they use. Never
# installed or exported; the CLI and the examples see the public headers only.
add_library(dblock_internal_headers INTERFACE)
target_include_directories(dblock_internal_headers INTERFACE "${PROJECT_SOURCE_DIR}/lib/src")

# dblock_add_component(<component>
#   SOURCES <files>            relative to the calling directory
#   COMPONENTS <components>    the dblock components it builds on (core, postgresql)
#   PUBLIC_DEPS <deps>         dblock::dep::* its public headers need
#   PRIVATE_DEPS <deps>        dblock::dep::* only its sources need
#   ANCHOR <symbol>)           a driver's registration anchor (see below)
function(dblock_add_component component)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ANCHOR" "SOURCES;COMPONENTS;PUBLIC_DEPS;PRIVATE_DEPS")
  set(name dblock_${component})
  set(public_deps "")
  foreach(dep IN LISTS arg_PUBLIC_DEPS)
    list(APPEND public_deps dblock::dep::${dep})
  endforeach()
  set(private_deps "")
  foreach(dep IN LISTS arg_PRIVATE_DEPS)
    list(APPEND private_deps dblock::dep::${dep})
  endforeach()
  set(uses "")
  set(uses_internal "")
  foreach(c IN LISTS arg_COMPONENTS)
    list(APPEND uses dblock_${c})
    list(APPEND uses_internal dblock_${c}_internal)
  endforeach()
  set(include_dirs "${PROJECT_SOURCE_DIR}/lib/include" "${PROJECT_BINARY_DIR}/include")

  # Compiled once, position-independent, with only the exported declarations visible.
  add_library(${name}_objects OBJECT ${arg_SOURCES})
  set_target_properties(${name}_objects PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    OPTIMIZE_DEPENDENCIES ON)
  target_compile_features(${name}_objects PRIVATE cxx_std_20)
  target_include_directories(${name}_objects PRIVATE ${include_dirs})
  target_link_libraries(${name}_objects PRIVATE dblock_internal_headers ${uses} ${public_deps}
                                                ${private_deps})
  dblock_set_warnings(${name}_objects)

  # What users link.
  add_library(${name} $<TARGET_OBJECTS:${name}_objects>)
  add_library(dblock::${component} ALIAS ${name})
  set_target_properties(${name} PROPERTIES
    EXPORT_NAME ${component}
    LINKER_LANGUAGE CXX
    VERSION ${PROJECT_VERSION}
    SOVERSION ${dblock_soversion})
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${include_dirs}>"
                                            "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  target_link_libraries(${name} PUBLIC ${uses} ${public_deps} PRIVATE ${private_deps})
  get_target_property(type ${name} TYPE)
  if(type STREQUAL "SHARED_LIBRARY" AND NOT DBLOCK_SANITIZE AND NOT DBLOCK_BUILD_FUZZERS)
    # Every symbol a library needs must come from a library it links: a missing export shows
    # here, not in a user's link.
    target_link_options(${name} PRIVATE "LINKER:--no-undefined")
  endif()

  # What dblock's own tests, benchmark and CLI link.
  if(type STREQUAL "SHARED_LIBRARY")
    add_library(${name}_internal STATIC EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${name}_objects>)
    set_target_properties(${name}_internal PROPERTIES LINKER_LANGUAGE CXX)
    target_compile_features(${name}_internal PUBLIC cxx_std_20)
    target_include_directories(${name}_internal PUBLIC ${include_dirs})
    target_link_libraries(${name}_internal PUBLIC ${uses_internal} ${public_deps} ${private_deps})
  else()
    add_library(${name}_internal ALIAS ${name})
  endif()

  # A driver registers itself with core from a static initializer in its registration file,
  # which no code calls: each program that links the driver compiles a file referring to the
  # registration's anchor, so the link keeps it (a static archive's member; a shared library
  # that --as-needed would drop). Installed with the CMake package (dblockInstall.cmake).
  if(arg_ANCHOR)
    string(REGEX REPLACE "^dblock_driver_" "" DBLOCK_DRIVER "${arg_ANCHOR}")
    set(DBLOCK_COMPONENT ${component})
    set(DBLOCK_ANCHOR ${arg_ANCHOR})
    set(keep "${PROJECT_BINARY_DIR}/link/dblock_keep_${component}.cpp")
    configure_file("${PROJECT_SOURCE_DIR}/cmake/driver_keep.cpp.in" "${keep}" @ONLY)
    target_sources(${name} INTERFACE
      "$<BUILD_INTERFACE:${keep}>"
      "$<INSTALL_INTERFACE:${CMAKE_INSTALL_DATADIR}/dblock/link/dblock_keep_${component}.cpp>")
    if(type STREQUAL "SHARED_LIBRARY")
      target_sources(${name}_internal INTERFACE "${keep}")
    endif()
    set_property(GLOBAL APPEND PROPERTY DBLOCK_KEEP_FILES "${keep}")
  endif()
endfunction()
