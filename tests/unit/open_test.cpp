// SPDX-License-Identifier: Apache-2.0
// open_connection() and the driver registry (open.cpp, driver_registry.cpp). The unit tests link
// dblock's core alone, as a program that links no driver library would: nothing is registered
// until a test registers a stand-in.
#include "dblock/open.hpp"

#include <gtest/gtest.h>

#include <string>

#include "dblock/error.hpp"
#include "driver_registry.hpp"

namespace dblock {
namespace {

// The message open_connection() throws for `url`, which must be Error(kInvalidArgument).
std::string refusal(const std::string& url) {
  try {
    open_connection(DatabaseUrl::parse(url));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << url << " was opened";
  return "";
}

TEST(Open, WithoutADriverLinkedNamesTheLibrariesToLink) {
  EXPECT_TRUE(available_drivers(Dialect::kPostgreSQL).empty());
  EXPECT_TRUE(available_drivers(Dialect::kMySQL).empty());
  EXPECT_EQ(refusal("postgresql://u:pw@127.0.0.1:1/db"),
            "no postgresql driver is linked into this program: link one of dblock::postgresql "
            "(pkg-config: dblock-postgresql), dblock::libpqxx (pkg-config: dblock-libpqxx), "
            "dblock::soci (pkg-config: dblock-soci) (drivers libpq, libpqxx, soci)");
  EXPECT_EQ(refusal("mysql://u:pw@127.0.0.1:1/db"),
            "no mysql driver is linked into this program: link one of dblock::mysql (pkg-config: "
            "dblock-mysql), dblock::soci (pkg-config: dblock-soci) (drivers libmysqlclient, soci)");
}

TEST(Open, ADriverTheUrlNamesButTheProgramLacksNamesItsLibrary) {
  EXPECT_EQ(refusal("postgresql://u:pw@127.0.0.1:1/db?driver=libpqxx"),
            "driver 'libpqxx' is not available in this program: link dblock::libpqxx "
            "(pkg-config: dblock-libpqxx)");
  EXPECT_EQ(refusal("mysql://u:pw@127.0.0.1:1/db?driver=soci"),
            "driver 'soci' is not available in this program: link dblock::soci (pkg-config: "
            "dblock-soci)");
}

TEST(Open, ADriverDblockDoesNotHaveForTheDialectIsRefused) {
  EXPECT_EQ(refusal("postgresql://u:pw@127.0.0.1:1/db?driver=odbc"),
            "driver 'odbc' is not available for postgresql URLs; dblock's drivers for them: "
            "libpq, libpqxx, soci");
  EXPECT_EQ(refusal("postgresql://u:pw@127.0.0.1:1/db?driver=libmysqlclient"),
            "driver 'libmysqlclient' is not available for postgresql URLs; dblock's drivers "
            "for them: libpq, libpqxx, soci");
}

// A stand-in for a driver library's opener: fails in a way the test recognises.
std::unique_ptr<Connection> fake_open(const DatabaseUrl& url) {
  throw Error(ErrorCode::kConnectFailed, "fake driver opened " + url.redacted());
}

TEST(Open, ARegisteredDriverOpensItsUrlsAndIsListed) {
  EXPECT_FALSE(detail::register_driver("odbc", &fake_open));
  ASSERT_TRUE(detail::register_driver("libpqxx", &fake_open));
  EXPECT_EQ(available_drivers(Dialect::kPostgreSQL), std::vector<std::string>{"libpqxx"});
  EXPECT_TRUE(available_drivers(Dialect::kMySQL).empty());
  try {
    open_connection(DatabaseUrl::parse("postgresql://u:pw@127.0.0.1:1/db"));  // the default
    ADD_FAILURE() << "the stand-in was not called";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConnectFailed);
    EXPECT_TRUE(std::string(e.what()).starts_with("fake driver opened postgresql://")) << e.what();
  }
  // libpq, once linked too, is the default for postgresql:// URLs and listed first.
  ASSERT_TRUE(detail::register_driver("libpq", &fake_open));
  EXPECT_EQ(available_drivers(Dialect::kPostgreSQL),
            (std::vector<std::string>{"libpq", "libpqxx"}));
  // An opener of nullptr unlinks the driver again (so the other tests in this process see
  // none).
  detail::register_driver("libpq", nullptr);
  detail::register_driver("libpqxx", nullptr);
  EXPECT_TRUE(available_drivers(Dialect::kPostgreSQL).empty());
}

}  // namespace
}  // namespace dblock
