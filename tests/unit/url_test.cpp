// SPDX-License-Identifier: Apache-2.0
#include "dblock/url.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "dblock/error.hpp"

namespace dblock {
namespace {

TEST(Url, ParsesFullPostgresqlUrl) {
  auto u = DatabaseUrl::parse("postgresql://alice:s%40cr%3At@db.example:6432/app?sslmode=require");
  EXPECT_EQ(u.dialect, Dialect::kPostgreSQL);
  EXPECT_EQ(u.user, "alice");
  EXPECT_EQ(u.password, "s@cr:t");
  EXPECT_EQ(u.host, "db.example");
  EXPECT_EQ(u.port, 6432);
  EXPECT_EQ(u.database, "app");
  ASSERT_EQ(u.params.size(), 1u);
  EXPECT_EQ(u.param("sslmode"), "require");
}

TEST(Url, AcceptsAliasesAndDefaults) {
  auto m = DatabaseUrl::parse("mariadb://bob@localhost/shop");
  EXPECT_EQ(m.dialect, Dialect::kMySQL);
  EXPECT_EQ(m.effective_port(), 3306);
  EXPECT_TRUE(m.password.empty());
  auto p = DatabaseUrl::parse("postgres:///app");
  EXPECT_EQ(p.dialect, Dialect::kPostgreSQL);
  EXPECT_TRUE(p.host.empty());
  EXPECT_EQ(p.effective_port(), 5432);
  EXPECT_EQ(p.database, "app");
}

TEST(Url, ParsesIpv6HostAndDriverParameter) {
  auto u = DatabaseUrl::parse("mysql://u:p@[::1]:3307/db?driver=soci&connect_timeout=3");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 3307);
  EXPECT_EQ(u.driver, "soci");
  ASSERT_EQ(u.params.size(), 1u);
  EXPECT_EQ(u.params[0].first, "connect_timeout");
}

TEST(Url, PoolModeTransactionMarksATransactionPoolerAndIsNotADriverParameter) {
  auto u = DatabaseUrl::parse("postgresql://u:p@h:6432/db?pool_mode=transaction&sslmode=disable");
  EXPECT_TRUE(u.transaction_pooler);
  ASSERT_EQ(u.params.size(), 1u);
  EXPECT_EQ(u.params[0].first, "sslmode");
  EXPECT_EQ(u.redacted(), "postgresql://u:***@h:6432/db?pool_mode=transaction&sslmode=disable");
  EXPECT_FALSE(DatabaseUrl::parse("postgresql://u@h/db?pool_mode=session").transaction_pooler);
  EXPECT_THROW(DatabaseUrl::parse("postgresql://u@h/db?pool_mode=statement"), Error);
}

TEST(Url, PasswordMayContainAtSign) {
  auto u = DatabaseUrl::parse("postgresql://u:p@ss@h/db");
  EXPECT_EQ(u.password, "p@ss");
  EXPECT_EQ(u.host, "h");
}

void expect_invalid(const std::string& url, const std::string& fragment,
                    const std::string& secret = "hunter2") {
  try {
    DatabaseUrl::parse(url);
    FAIL() << "parsed: " << url;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find(secret), std::string::npos) << "password leaked: " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
  }
}

TEST(Url, RejectsMalformedUrlsWithoutLeakingThePassword) {
  expect_invalid("", "empty");
  expect_invalid("localhost:5432", "missing '://'");
  expect_invalid("http://u:hunter2@h/db", "unsupported scheme 'http'");
  expect_invalid("postgresql://u:hunter2@h:99999/db", "not a number from 1 to 65535");
  expect_invalid("postgresql://u:hunter2@h:abc/db", "not a number");
  expect_invalid("postgresql://u:hunter2@h:/db", "empty port");
  expect_invalid("postgresql://u:hunter2@h:0/db", "not a number from 1 to 65535");
  expect_invalid("postgresql://u:hunter2@[::1/db", "unterminated '['");
  expect_invalid("postgresql://u:hunter2@h/db?x", "name=value");
  expect_invalid("postgresql://u:hunter2@h/db?password=hunter2", "DBLOCK_PASSWORD");
  expect_invalid("postgresql://u:hunter2%zz@h/db", "percent-escape");
  expect_invalid("postgresql://u:%00hunter2@h/db", "NUL");
  expect_invalid("postgresql://:hunter2@h/db", "user name");
  expect_invalid("postgresql://u:hunter2@h/a/b", "contains '/'");
}

TEST(Url, APasswordWithARawSlashOrQuestionMarkIsRefusedAndNotShown) {
  // Each would otherwise put part of the password into the port, database or a parameter.
  expect_invalid("postgresql://u:hunter2/x@h/db", "percent-encode '/', '?' and '@'", "hunter2");
  expect_invalid("mysql://u:12/hunter2@h", "percent-encode", "hunter2");
  expect_invalid("mysql://u:12?hunter2=1@h/db", "percent-encode", "hunter2");
  expect_invalid("mysql://u:hunter2@h/db?ssl_ca=/a@b", "%40");
  auto ok = DatabaseUrl::parse("mysql://u:12%2Fx@h/d%40b?ssl_ca=%2Fa%40b");
  EXPECT_EQ(ok.password, "12/x");
  EXPECT_EQ(ok.database, "d@b");
  EXPECT_EQ(ok.param("ssl_ca"), "/a@b");
}

TEST(Url, MessagesStayOneLine) {
  expect_invalid("postgresql://h:1\n2/db", "\\x0a");
  expect_invalid("redis\r://h/db", "unsupported scheme 'redis\\x0d'");
}

TEST(Url, Ipv6HostsArePercentDecodedAndRoundTrip) {
  auto u = DatabaseUrl::parse("postgresql://u:pw@[fe80::1%25eth0]:5433/db");
  EXPECT_EQ(u.host, "fe80::1%eth0");
  EXPECT_EQ(u.redacted(), "postgresql://u:***@[fe80::1%25eth0]:5433/db");
  EXPECT_EQ(DatabaseUrl::parse(u.redacted()).host, u.host);
}

TEST(Url, ParsesSeveralHostsEachWithItsPort) {
  auto u =
      DatabaseUrl::parse("postgresql://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write");
  EXPECT_EQ(u.host, "h1");
  EXPECT_EQ(u.port, 5432);
  ASSERT_EQ(u.more_hosts.size(), 1u);
  EXPECT_EQ(u.more_hosts[0], (HostPort{"h2", 5433}));
  EXPECT_EQ(u.param("target_session_attrs"), "read-write");
  EXPECT_EQ(u.redacted(), "postgresql://u:***@h1:5432,h2:5433/db?target_session_attrs=read-write");
  EXPECT_EQ(DatabaseUrl::parse(u.redacted()).more_hosts, u.more_hosts);

  auto mixed = DatabaseUrl::parse("postgres://u@[::1]:6432,db2,[fe80::1%25eth0],:7/app");
  EXPECT_EQ(mixed.host, "::1");
  EXPECT_EQ(mixed.port, 6432);
  EXPECT_EQ(mixed.more_hosts, (std::vector<HostPort>{{"db2", 0}, {"fe80::1%eth0", 0}, {"", 7}}));
  EXPECT_EQ(mixed.redacted(), "postgresql://u@[::1]:6432,db2,[fe80::1%25eth0],:7/app");
  EXPECT_TRUE(DatabaseUrl::parse("postgresql://u@h/db").more_hosts.empty());
}

TEST(Url, ASocketDirectoryIsAPostgresqlHost) {
  auto u = DatabaseUrl::parse("postgresql://u:pw@%2Fvar%2Frun%2Fpostgresql/db");
  EXPECT_EQ(u.host, "/var/run/postgresql");
  EXPECT_EQ(u.port, 0);
  EXPECT_EQ(u.redacted(), "postgresql://u:***@%2Fvar%2Frun%2Fpostgresql/db");
  EXPECT_EQ(DatabaseUrl::parse(u.redacted()).host, u.host);
  auto with_port = DatabaseUrl::parse("postgresql://u@%2ftmp:5433,h2/db");
  EXPECT_EQ(with_port.host, "/tmp");
  EXPECT_EQ(with_port.port, 5433);
  // As a parameter, libpq's own form: handed to libpq as it is.
  auto param = DatabaseUrl::parse("postgresql:///db?host=/var/run/postgresql&port=5433");
  EXPECT_EQ(param.host, "");
  EXPECT_EQ(param.param("host"), "/var/run/postgresql");
  EXPECT_EQ(param.param("port"), "5433");
  EXPECT_EQ(param.redacted(), "postgresql:///db?host=%2Fvar%2Frun%2Fpostgresql&port=5433");
  // MySQL names its socket with ?socket=.
  expect_invalid("mysql://u:hunter2@%2Ftmp/db", "invalid character");
}

TEST(Url, RefusesHostListsLibpqWouldReadOtherwise) {
  expect_invalid("mysql://u:hunter2@h1:3306,h2:3307/db", "a mysql:// URL names one host");
  expect_invalid("postgresql://u:hunter2@h1:1,h2:x/db", "the port 'x' is not a number");
  expect_invalid("postgresql://u:hunter2@h1,h2:/db", "empty port");
  expect_invalid("postgresql://u:hunter2@::1,h2/db", "must be in brackets");
  expect_invalid("postgresql://u:hunter2@a%2Cb/db", "invalid character");  // one host, or two?
  expect_invalid("postgresql://u:hunter2@h1,h%20x/db", "invalid character");
  expect_invalid("postgresql://u:hunter2@tmp%2Fx/db", "invalid character");  // not a directory
}

TEST(Url, RedactedHidesTheClientKeysPasswordToo) {
  auto u = DatabaseUrl::parse("postgresql://u@h/db?sslmode=verify-full&sslpassword=hunter2");
  EXPECT_EQ(u.param("sslpassword"), "hunter2");
  EXPECT_EQ(u.redacted(), "postgresql://u@h/db?sslmode=verify-full&sslpassword=***");
}

TEST(Url, RedactedHidesThePassword) {
  auto u = DatabaseUrl::parse("mysql://root:hunter2@127.0.0.1:3306/app?driver=soci");
  EXPECT_EQ(u.redacted(), "mysql://root:***@127.0.0.1:3306/app?driver=soci");
}

TEST(Url, PasswordFromEnvironmentWhenUrlHasNone) {
  ::setenv("DBLOCK_PASSWORD", "from-env", 1);
  auto u = DatabaseUrl::resolve(std::string("postgresql://u@h/db"));
  EXPECT_EQ(u.password, "from-env");
  auto v = DatabaseUrl::resolve(std::string("postgresql://u:inline@h/db"));
  EXPECT_EQ(v.password, "inline");
  ::unsetenv("DBLOCK_PASSWORD");
}

TEST(Url, PasswordFromFile) {
  std::string path = ::testing::TempDir() + "/dblock_pw_file";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("filepw\n", f);
    std::fclose(f);
  }
  ::setenv("DBLOCK_PASSWORD_FILE", path.c_str(), 1);
  auto u = DatabaseUrl::resolve(std::string("mysql://u@h/db"));
  EXPECT_EQ(u.password, "filepw");
  ::setenv("DBLOCK_PASSWORD_FILE", "/nonexistent/dblock", 1);
  EXPECT_THROW(DatabaseUrl::resolve(std::string("mysql://u@h/db")), Error);
  ::unsetenv("DBLOCK_PASSWORD_FILE");
}

TEST(Url, FromEnvRequiresDblockUrl) {
  ::unsetenv("DBLOCK_URL");
  try {
    DatabaseUrl::from_env();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DBLOCK_URL"), std::string::npos);
  }
  ::setenv("DBLOCK_URL", "mysql://u@h:1234/x", 1);
  EXPECT_EQ(DatabaseUrl::from_env().port, 1234);
  ::unsetenv("DBLOCK_URL");
}

TEST(Scrub, ReplacesRawAndPercentEncodedSecret) {
  EXPECT_EQ(scrub("a p@ss b p%40ss c", "p@ss"), "a *** b *** c");
  EXPECT_EQ(scrub("nothing", ""), "nothing");
}

}  // namespace
}  // namespace dblock
