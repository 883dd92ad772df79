// SPDX-License-Identifier: Apache-2.0
#include "dblock/connection.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dblock/error.hpp"

namespace dblock {
namespace {

TEST(Value, ToTextIsExact) {
  EXPECT_FALSE(Value().to_text().has_value());
  EXPECT_FALSE(Value(nullptr).to_text().has_value());
  EXPECT_EQ(Value(-42).to_text(), "-42");
  EXPECT_EQ(Value(9223372036854775807LL).to_text(), "9223372036854775807");
  EXPECT_EQ(Value(0.1).to_text(), "0.1");
  EXPECT_EQ(Value("it's").to_text(), "it's");
  EXPECT_EQ(Value(std::string_view("a\0b", 3)).to_text()->size(), 3u);
}

TEST(Result, CellAccessByIndexAndName) {
  Result r({"id", "name"}, {{"7", "x"}, {"8", std::nullopt}}, 2);
  EXPECT_EQ(r.size(), 2u);
  EXPECT_EQ(r.affected_rows(), 2u);
  EXPECT_EQ(r.int64_at(1, "id"), 8);
  EXPECT_EQ(r.at(0, "name"), "x");
  EXPECT_FALSE(r.at(1, "name").has_value());
  EXPECT_THROW(r.column("missing"), Error);
  EXPECT_THROW(r.at(2, 0), Error);
  EXPECT_THROW(r.int64_at(1, "name"), Error);  // NULL
  EXPECT_THROW(r.int64_at(0, "name"), Error);  // not a number
}

// A PostgreSQL connection that records its statements.
class RecordingConnection final : public Connection {
 public:
  explicit RecordingConnection(bool notifications) : notifications_(notifications) {}
  Dialect dialect() const noexcept override { return Dialect::kPostgreSQL; }
  Result execute(std::string_view sql, std::span<const Value>) override {
    sent.emplace_back(sql);
    return {};
  }
  void begin() override {}
  void commit() override {}
  void rollback() noexcept override {}
  bool in_transaction() const noexcept override { return false; }
  bool broken() const noexcept override { return false; }
  bool supports_notifications() const noexcept override { return notifications_; }
  std::string describe() const override { return "recording"; }

  std::vector<std::string> sent;

 private:
  bool notifications_;
};

TEST(Connection, ListenSendsListenWithTheChannelQuoted) {
  RecordingConnection c(true);
  c.listen("Release_Chan");
  EXPECT_EQ(c.sent, std::vector<std::string>{"LISTEN \"Release_Chan\""});
  try {
    c.listen("no; DROP TABLE x");
    FAIL() << "a channel that is not an identifier was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_EQ(c.sent.size(), 1u);
}

TEST(Connection, ListenWithoutNotificationsIsAFailedPrecondition) {
  RecordingConnection c(false);
  try {
    c.listen("chan");
    FAIL() << "listen() without notifications succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
  }
  EXPECT_TRUE(c.sent.empty());
}

}  // namespace
}  // namespace dblock
