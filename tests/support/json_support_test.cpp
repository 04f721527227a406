// json.h reads what the tools print, and refuses what is not JSON: the tests'
// assertions on the tools' output rest on it.
#include <gtest/gtest.h>

#include <stdexcept>

#include "support/json.h"

using tc::test::JsonValue;
using tc::test::parse_json;

TEST(TestJson, ReadsEveryKindOfValue) {
  JsonValue j = parse_json(R"({"a": [1, -2.5e3, true, false, null, "caf\u00e9\n"], "b": {"c": 18446744073709551615}})");
  ASSERT_EQ(j.type, JsonValue::kObject);
  ASSERT_EQ(j["a"].a.size(), 6u);
  EXPECT_EQ(j["a"].a[0].n, 1);
  EXPECT_EQ(j["a"].a[1].n, -2500);
  EXPECT_TRUE(j["a"].a[2].b);
  EXPECT_EQ(j["a"].a[3].type, JsonValue::kBool);
  EXPECT_EQ(j["a"].a[4].type, JsonValue::kNull);
  EXPECT_EQ(j["a"].a[5].s, "caf\xc3\xa9\n");
  EXPECT_EQ(j["b"]["c"].n, 18446744073709551615.0);
  EXPECT_TRUE(j.has("b"));
  EXPECT_FALSE(j.has("z"));
  EXPECT_THROW(j["z"], std::runtime_error);
}

TEST(TestJson, RefusesWhatIsNotStrictJson) {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "[01]", "[1] x", "{\"a\":1,\"a\":2}", "{\"o\":{\"k\":1,\"k\":1}}", "[\"\x01\"]",
                          "[\"\xff\"]", "[\"\xed\xa0\x80\"]", "'a'", "[NaN]", "/* c */ 1"}) {
    EXPECT_THROW(parse_json(bad), std::runtime_error) << bad;
  }
  EXPECT_NO_THROW(parse_json(R"([{"k":1},{"k":1}])")) << "the same key in two objects";
}
