# SPDX-License-Identifier: Apache-2.0
# Debian packages with CPack (`cpack -G DEB` in a build directory; scripts/package-check.sh
# builds and checks them):
#   dblock         the dblock program (dblock's libraries linked in statically), its man pages
#                  and bash completion, the schema and migrations as SQL, systemd examples
#   libdblock-dev  headers, the libraries (shared ones when built with BUILD_SHARED_LIBS=ON, and
#                  their static archives with DBLOCK_INSTALL_ARCHIVES=ON), the CMake package and
#                  the pkg-config files
# Runtime dependencies come from dpkg-shlibdeps; the development packages a component's headers
# and link need are listed by hand below.
set(DBLOCK_PACKAGE_CONTACT "dblock maintainers <maintainers@dblock.invalid>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_PACKAGE_NAME dblock)
set(CPACK_PACKAGE_VENDOR "dblock")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "${DBLOCK_PACKAGE_CONTACT}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGE_DIRECTORY "${PROJECT_BINARY_DIR}/packages")
set(CPACK_GENERATOR DEB)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_STRIP_FILES ON)  # the program and the shared libraries; archives are left whole

set(CPACK_DEBIAN_CLI_PACKAGE_NAME dblock)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION database)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "locks kept in the SQL database a service already owns (command-line program)
 The dblock program applies dblock's schema (migrate), deletes expired lock rows
 (clean), lists and force-releases locks (locks, release), runs a command under a
 lock (run) and checks a deployment (doctor), on PostgreSQL and MySQL/MariaDB.
 Also: man pages, bash completion, the schema and migrations as SQL files and
 systemd unit examples.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdblock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "locks kept in the SQL database a service already owns (development files)
 dblock is a C++20 library of leases, row locks and optimistic locks kept in a
 PostgreSQL or MySQL/MariaDB database. This package has its headers, libraries,
 CMake package (find_package(dblock COMPONENTS ...)) and pkg-config files.")
# What compiling against the core headers needs; each driver component's (and the prometheus and
# opentelemetry components') own development package is suggested (find_package asks for it only when that
# component is requested).
set(dblock_dev_depends "nlohmann-json3-dev (>= 3.2)")
set(dblock_dev_suggests "")
if(dblock_HAVE_LIBPQ)
  string(APPEND dblock_dev_depends ", libpq-dev")
endif()
if(dblock_HAVE_LIBPQXX)
  list(APPEND dblock_dev_suggests "libpqxx-dev")
endif()
if(dblock_HAVE_MYSQL)
  list(APPEND dblock_dev_suggests "libmariadb-dev | default-libmysqlclient-dev")
endif()
if(dblock_HAVE_SOCI)
  list(APPEND dblock_dev_suggests "libsoci-dev" "libboost-dev")
endif()
if(dblock_HAVE_PROMETHEUS)
  list(APPEND dblock_dev_suggests "prometheus-cpp-dev")
endif()
if(dblock_HAVE_OPENTELEMETRY)
  list(APPEND dblock_dev_suggests "opentelemetry-cpp-dev" "libabsl-dev")
endif()
list(JOIN dblock_dev_suggests ", " dblock_dev_suggests)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${dblock_dev_depends}")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "${dblock_dev_suggests}")
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "postgresql-client | default-mysql-client")

include(CPack)
