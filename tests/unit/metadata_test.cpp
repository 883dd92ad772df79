// SPDX-License-Identifier: Apache-2.0
#include "metadata.hpp"

#include <gtest/gtest.h>

#include <string>

#include "dblock/error.hpp"
#include "dblock/json.hpp"

namespace dblock::detail {
namespace {

std::string refusal(const std::string& text) {
  try {
    validate_metadata(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "not one line: " << what;
    return what;
  }
  return "";
}

TEST(Metadata, AcceptsEveryKindOfJsonValueAndEmptyText) {
  for (const char* text :
       {"", "{}", "[]", R"({"job":"nightly","n":3})", R"( ["a", 1, 2.5e10, true, null] )", "0",
        "-1.5E-300", "123456789012345678901234567890", "\"\"", "true", "null",
        R"("caf\u00e9 \ud83d\udd12 \" \\ \/ \b\f\n\r\t")", "\"\xc3\xa9\xf0\x9f\x94\x92\"",
        R"({"a":1,"a":2})"}) {
    EXPECT_EQ(refusal(text), "") << text;
  }
}

TEST(Metadata, RefusesTextThatIsNotJsonSayingWhatToPass) {
  for (const char* text : {"nightly", "{job: 1}", "{\"a\":1,}", "[1 2]", "{\"a\":1} x", "  ",
                           "'single'", "NaN", "01", "\"tab\tinside\"", "{\"a\"", "\"\\x41\""}) {
    const std::string what = refusal(text);
    EXPECT_NE(what.find("the lock metadata is not JSON"), std::string::npos) << text;
    EXPECT_NE(what.find(R"(such as {"job":"nightly"})"), std::string::npos) << what;
  }
  EXPECT_NE(refusal("[1,\n2,\nx]").find("line 3"), std::string::npos);
  // Beyond a double's range: nlohmann's parser, which reads it back too, cannot hold it.
  EXPECT_NE(refusal("1e400").find("number overflow"), std::string::npos);
}

TEST(Metadata, RefusesWhatAServerCannotStore) {
  EXPECT_NE(refusal("\"\xff\xfe\"").find("is not JSON"), std::string::npos);  // not UTF-8
  EXPECT_NE(refusal(R"("\ud800")").find("is not JSON"), std::string::npos);   // lone surrogate
  EXPECT_NE(refusal(R"({"a":"x\u0000y"})").find("\\u0000 in a string"), std::string::npos);
  EXPECT_NE(refusal(R"({"\u0000":1})").find("\\u0000 in a member name"), std::string::npos);
  EXPECT_NE(refusal("\xef\xbb\xbf{}").find("byte order mark"), std::string::npos);
  const auto nested = [](int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
  };
  EXPECT_EQ(refusal(nested(kMaxMetadataDepth)), "");
  EXPECT_NE(refusal(nested(kMaxMetadataDepth + 1)).find("more than 31 deep"), std::string::npos);
  EXPECT_NE(refusal(nested(100000)).find("more than 31 deep"), std::string::npos);
}

TEST(Metadata, ABoundParameterIsNullWhenEmptyAndTheTextOtherwise) {
  EXPECT_TRUE(metadata_param("").is_null());
  EXPECT_EQ(metadata_param(R"({"a":1})").to_text(), R"({"a":1})");
}

TEST(JsonHeader, WritesAndReadsMetadataText) {
  EXPECT_EQ(metadata_text(nullptr), "");
  EXPECT_EQ(metadata_text({{"job", "nightly"}, {"n", 3}}), R"({"job":"nightly","n":3})");
  EXPECT_EQ(metadata_text("x"), R"("x")");
  validate_metadata(metadata_text({{"deep", {{"er", {1, 2, 3}}}}}));
  try {
    metadata_text("\xff");
    FAIL() << "invalid UTF-8 was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(metadata_json("").is_null());
  EXPECT_EQ(metadata_json(R"({"n": 3})"), nlohmann::json({{"n", 3}}));
  EXPECT_THROW(metadata_json("{"), Error);
}

}  // namespace
}  // namespace dblock::detail
