//===- JsonTest.cpp - The small JSON parser and printer -------------------===//

#include "convrt/Json.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace convrt;

namespace {

std::string errorOf(const std::string &text) {
  Expected<JsonValue> value = parseJson(text);
  return value.ok() ? "" : value.error().message();
}

TEST(JsonTest, ParsesEveryKind) {
  Expected<JsonValue> value = parseJson(
      R"({"a": null, "b": true, "c": false, "d": -12.5e1, "e": "x\"y",
          "f": [1, 2, [3]], "g": {}, "h": []})");
  ASSERT_TRUE(value.ok()) << value.error().message();
  EXPECT_TRUE(value->find("a")->isNull());
  EXPECT_TRUE(value->find("b")->asBool());
  EXPECT_FALSE(value->find("c")->asBool());
  EXPECT_EQ(value->find("d")->asNumber(), -125.0);
  EXPECT_EQ(value->find("e")->asString(), "x\"y");
  EXPECT_EQ(value->find("f")->elements().size(), 3u);
  EXPECT_TRUE(value->find("g")->isObject());
  EXPECT_TRUE(value->find("h")->isArray());
  EXPECT_EQ(value->find("missing"), nullptr);
}

TEST(JsonTest, KeepsKeyOrderAndPositions) {
  Expected<JsonValue> value = parseJson("{\n  \"z\": 1,\n  \"a\": [true]\n}");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->members()[0].first, "z");
  EXPECT_EQ(value->members()[1].first, "a");
  EXPECT_EQ(value->find("a")->line(), 3);
  EXPECT_EQ(value->find("a")->column(), 8);
  EXPECT_EQ(value->find("a")->elements()[0].column(), 9);
}

TEST(JsonTest, UnicodeEscapes) {
  Expected<JsonValue> value =
      parseJson(R"(["\u00e9", "\ud83d\ude00", "\n\t\/"])");
  ASSERT_TRUE(value.ok()) << value.error().message();
  EXPECT_EQ(value->elements()[0].asString(), "\xC3\xA9");
  EXPECT_EQ(value->elements()[1].asString(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(value->elements()[2].asString(), "\n\t/");
}

TEST(JsonTest, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(
      errorOf("{\"a\": 1,\n \"b\" 2}"),
      "line 2, column 6: expected ':' after member name \"b\", found '2'");
  EXPECT_EQ(
      errorOf("[1, 2"),
      "line 1, column 6: expected ',' or ']' in array, found end of input");
  EXPECT_EQ(errorOf("{\"a\": 1, \"a\": 2}"),
            "line 1, column 10: duplicate key \"a\"");
  EXPECT_EQ(errorOf("{\"a\": 01}"),
            "line 1, column 8: expected ',' or '}' in object, found '1'");
  EXPECT_EQ(errorOf("\"abc"), "line 1, column 5: unterminated string");
  EXPECT_EQ(errorOf("\"a\nb\""),
            "line 1, column 3: control character in string (escape it)");
  EXPECT_EQ(errorOf("[1] x"),
            "line 1, column 5: unexpected text after the JSON value");
  EXPECT_EQ(errorOf("tru"), "line 1, column 1: expected a value, found 't'");
  EXPECT_EQ(errorOf(""),
            "line 1, column 1: expected a value, found end of input");
  EXPECT_EQ(errorOf("[\"\\x\"]"), "line 1, column 5: invalid escape \\x");
  EXPECT_EQ(errorOf("\"\\ud800\""),
            "line 1, column 8: unpaired UTF-16 surrogate in \\u escape");
  EXPECT_EQ(errorOf("[1.]"),
            "line 1, column 4: expected digits after the decimal point");
  EXPECT_NE(errorOf(std::string(200, '[') + std::string(200, ']'))
                .find("nesting deeper than"),
            std::string::npos);
}

TEST(JsonTest, DumpsCompactAndPretty) {
  JsonValue value = JsonValue::object()
                        .set("name", "conv \"1\"")
                        .set("shape", JsonValue::array().push(1).push(64))
                        .set("ms", 0.125)
                        .set("big", int64_t(1) << 40)
                        .set("nan", std::nan(""))
                        .set("empty", JsonValue::object())
                        .set("ok", true);
  EXPECT_EQ(
      value.dump(),
      R"({"name":"conv \"1\"","shape":[1,64],"ms":0.125,"big":1099511627776,"nan":null,"empty":{},"ok":true})");
  EXPECT_EQ(
      JsonValue::object().set("a", JsonValue::array().push(1).push(2)).dump(2),
      "{\n  \"a\": [1, 2]\n}");
  EXPECT_EQ(JsonValue(1.5e-7).dump(), "1.5e-07");
  EXPECT_EQ(jsonQuote("a\x01"), "\"a\\u0001\"");
}

TEST(JsonTest, DumpParsesBack) {
  JsonValue value = JsonValue::object()
                        .set("list", JsonValue::array()
                                         .push(JsonValue::object().set("x", 1))
                                         .push("text\n"))
                        .set("n", -3);
  for (int indent : {-1, 0, 2}) {
    Expected<JsonValue> parsed = parseJson(value.dump(indent));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    EXPECT_EQ(parsed->dump(), value.dump());
  }
}

} // namespace
