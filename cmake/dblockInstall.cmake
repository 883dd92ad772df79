# Install rules: libraries, public headers, the CMake package (find_package(dblock)) and a
# pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS ${dblock_installed_targets}
        EXPORT dblockTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# Public headers: the core ones always, each driver's own header only when that driver was built.
set(dblock_driver_headers libpq.hpp libpqxx.hpp libmysqlclient.hpp soci.hpp)
file(GLOB dblock_all_headers RELATIVE "${PROJECT_SOURCE_DIR}/lib/include/dblock"
     "${PROJECT_SOURCE_DIR}/lib/include/dblock/*.hpp")
set(dblock_headers_to_install)
foreach(h IN LISTS dblock_all_headers)
  if(NOT h IN_LIST dblock_driver_headers)
    list(APPEND dblock_headers_to_install "${PROJECT_SOURCE_DIR}/lib/include/dblock/${h}")
  endif()
endforeach()
if(dblock_HAVE_LIBPQXX)
  list(APPEND dblock_headers_to_install "${PROJECT_SOURCE_DIR}/lib/include/dblock/libpq.hpp"
       "${PROJECT_SOURCE_DIR}/lib/include/dblock/libpqxx.hpp")
endif()
if(dblock_HAVE_MYSQL)
  list(APPEND dblock_headers_to_install
       "${PROJECT_SOURCE_DIR}/lib/include/dblock/libmysqlclient.hpp")
endif()
if(dblock_HAVE_SOCI)
  list(APPEND dblock_headers_to_install "${PROJECT_SOURCE_DIR}/lib/include/dblock/soci.hpp")
endif()
install(FILES ${dblock_headers_to_install} DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/dblock")

set(dblock_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/dblock")
install(EXPORT dblockTargets NAMESPACE dblock:: DESTINATION "${dblock_cmake_dir}")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/dblockConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/dblockConfig.cmake"
                              INSTALL_DESTINATION "${dblock_cmake_dir}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/dblockConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/dblockConfig.cmake"
              "${PROJECT_BINARY_DIR}/dblockConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/dblockDependencies.cmake"
        DESTINATION "${dblock_cmake_dir}")

# pkg-config: one file for everything built (core, each driver, open()).
set(dblock_pc_requires " nlohmann_json")
set(dblock_pc_libs "-ldblock")
if(dblock_HAVE_SOCI)
  string(APPEND dblock_pc_libs " -ldblock_soci")
endif()
if(dblock_HAVE_MYSQL)
  string(APPEND dblock_pc_libs " -ldblock_mysql")
endif()
if(dblock_HAVE_LIBPQXX)
  string(APPEND dblock_pc_libs " -ldblock_postgresql")
  string(APPEND dblock_pc_requires " libpqxx libpq")
endif()
string(APPEND dblock_pc_libs " -ldblock_core -pthread")
set(dblock_pc_extra_libs "")
set(dblock_pc_extra_cflags "")
if(dblock_HAVE_MYSQL OR dblock_HAVE_SOCI)
  string(APPEND dblock_pc_requires " ${dblock_MYSQL_PC}")
endif()
if(dblock_HAVE_SOCI)
  string(APPEND dblock_pc_requires " libpq")
  set(dblock_pc_extra_libs "${dblock_SOCI_POSTGRESQL} ${dblock_SOCI_MYSQL} ${dblock_SOCI_CORE} -ldl")
  set(dblock_pc_extra_cflags "-I${dblock_SOCI_INCLUDE_DIR} -I${dblock_BOOST_INCLUDE_DIR}")
endif()
# Relocatable: the prefix is found from the .pc file's own directory.
string(REGEX REPLACE "[^/]+" ".." dblock_pc_up "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file("${PROJECT_SOURCE_DIR}/cmake/dblock.pc.in" "${PROJECT_BINARY_DIR}/dblock.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/dblock.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
