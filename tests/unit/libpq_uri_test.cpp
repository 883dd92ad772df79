// SPDX-License-Identifier: Apache-2.0
#include "libpq_uri.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dblock::detail {
namespace {

TEST(LibpqUri, CarriesEveryServerTheDatabaseAndTheParameters) {
  const DatabaseUrl url = DatabaseUrl::parse(
      "postgresql://app:s%20cr%40t@h1:5432,%2Fvar%2Frun%2Fpostgresql,[::1]:5433/my%20db"
      "?driver=libpq&pool_mode=transaction&target_session_attrs=read-write&options=-c%20x%3D1");
  EXPECT_EQ(libpq_uri(url, false),
            "postgresql://h1:5432,%2Fvar%2Frun%2Fpostgresql,[::1]:5433/my%20db"
            "?target_session_attrs=read-write&options=-c%20x%3D1"
            "&connect_timeout=10&fallback_application_name=dblock");
  const std::string with = libpq_uri(url, true);
  EXPECT_NE(with.find("&user=app&password=s%20cr%40t&"), std::string::npos) << with;
  EXPECT_EQ(with.find(' '), std::string::npos) << "SOCI 4.0 splits at spaces: " << with;
}

TEST(LibpqUri, KeepsWhatTheUrlSetsItself) {
  DatabaseUrl url = DatabaseUrl::parse(
      "postgresql://app@/db?host=/tmp&user=other&connect_timeout=3&fallback_application_name=x");
  url.password = "from-env";
  EXPECT_EQ(libpq_uri(url, true),
            "postgresql:///db?host=%2Ftmp&user=other&connect_timeout=3"
            "&fallback_application_name=x&password=from-env");
}

TEST(LibpqUri, NamesTheServersAsLibpqReadsThem) {
  EXPECT_EQ(postgresql_location("h1,/tmp,::1,", "5432,,6000,7", "db"),
            "PostgreSQL h1:5432,/tmp:5432,[::1]:6000,(default socket):7/db");
  EXPECT_EQ(postgresql_location("a,b", "6432", "db"), "PostgreSQL a:6432,b:6432/db");
  EXPECT_EQ(postgresql_location("", "", ""), "PostgreSQL (default socket):5432/");
  EXPECT_EQ(postgresql_location(DatabaseUrl::parse("postgresql://u@h1:1,h2/db")),
            "PostgreSQL h1:1,h2:5432/db");
  // Parameters over the authority and path, as libpq applies them.
  EXPECT_EQ(postgresql_location(
                DatabaseUrl::parse("postgresql://u@h1/db?host=/run/pg&port=5433&dbname=other")),
            "PostgreSQL /run/pg:5433/other");
}

}  // namespace
}  // namespace dblock::detail
