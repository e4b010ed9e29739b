//===- JsonTest.cpp - nlohmann-json behind convrt's no-throw helpers ------===//

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
          "f": [1, 2, [3]], "g": {}, "h": [], "i": -7})");
  ASSERT_TRUE(value.ok()) << value.error().message();
  EXPECT_TRUE(findMember(*value, "a")->is_null());
  EXPECT_TRUE(findMember(*value, "b")->get<bool>());
  EXPECT_FALSE(findMember(*value, "c")->get<bool>());
  EXPECT_EQ(findMember(*value, "d")->get<double>(), -125.0);
  EXPECT_EQ(findMember(*value, "e")->get<std::string>(), "x\"y");
  EXPECT_EQ(findMember(*value, "f")->size(), 3u);
  EXPECT_TRUE(findMember(*value, "g")->is_object());
  EXPECT_TRUE(findMember(*value, "h")->is_array());
  EXPECT_EQ(findMember(*value, "i")->get<int64_t>(), -7);
  EXPECT_EQ(findMember(*value, "missing"), nullptr);
  EXPECT_EQ(findMember(JsonValue::array(), "a"), nullptr);
}

TEST(JsonTest, KeepsKeyOrder) {
  Expected<JsonValue> value = parseJson("{\n  \"z\": 1,\n  \"a\": [true]\n}");
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->begin().key(), "z");
  EXPECT_EQ(dumpJson(*value), R"({"z":1,"a":[true]})");
}

TEST(JsonTest, UnicodeEscapes) {
  Expected<JsonValue> value =
      parseJson(R"(["\u00e9", "\ud83d\ude00", "\n\t\/"])");
  ASSERT_TRUE(value.ok()) << value.error().message();
  EXPECT_EQ((*value)[0].get<std::string>(), "\xC3\xA9");
  EXPECT_EQ((*value)[1].get<std::string>(), "\xF0\x9F\x98\x80");
  EXPECT_EQ((*value)[2].get<std::string>(), "\n\t/");
}

TEST(JsonTest, SyntaxErrorsSayWhereAndWhat) {
  // nlohmann's reason, with its line, column and byte offset.
  EXPECT_EQ(errorOf("{\"a\": 1,\n \"b\" 2}"),
            "parse error at line 2, column 6 (byte 15): syntax error while "
            "parsing object separator - unexpected number literal; expected "
            "':'");
  EXPECT_EQ(errorOf("[1, 2"),
            "parse error at line 1, column 6 (byte 6): syntax error while "
            "parsing array - unexpected end of input; expected ']'");
  EXPECT_EQ(errorOf("[1] x"),
            "parse error at line 1, column 5 (byte 5): syntax error while "
            "parsing value - invalid literal; last read: '1] x'; expected "
            "end of input");
  for (const char *bad : {"", "tru", "\"abc", "\"a\nb\"", "[\"\\x\"]",
                          "\"\\ud800\"", "[1.]", "{\"a\": 01}", "[1,]"})
    EXPECT_EQ(errorOf(bad).rfind("parse error at line ", 0), 0u)
        << bad << " -> " << errorOf(bad);
}

TEST(JsonTest, DuplicateKeysAndDeepNestingAreErrors) {
  EXPECT_EQ(errorOf(R"({"a": 1, "a": 2})"), "duplicate key \"a\"");
  EXPECT_EQ(errorOf(R"({"k": {"grid": [1], "grid": [2]}})"),
            "duplicate key \"k.grid\"");
  EXPECT_EQ(errorOf(R"({"l": [{"x": 1}, {"x": 1, "x": 2}]})"),
            "duplicate key \"l[1].x\"");
  EXPECT_EQ(errorOf(std::string(200, '[') + std::string(200, ']')),
            "nesting deeper than 128");
  EXPECT_TRUE(parseJson(std::string(128, '[') + std::string(128, ']')).ok());
}

TEST(JsonTest, DumpsCompactAndPretty) {
  JsonValue value = {{"name", "conv \"1\""},
                     {"shape", {1, 64}},
                     {"ms", 0.125},
                     {"big", int64_t(1) << 40},
                     {"nan", std::nan("")},
                     {"empty", JsonValue::object()},
                     {"ok", true}};
  EXPECT_EQ(
      dumpJson(value),
      R"({"name":"conv \"1\"","shape":[1,64],"ms":0.125,"big":1099511627776,"nan":null,"empty":{},"ok":true})");
  // Arrays of scalars stay on one line; others break.
  EXPECT_EQ(dumpJson({{"a", {1, 2}}}, 2), "{\n  \"a\": [1, 2]\n}");
  EXPECT_EQ(dumpJson({{"l", {{{"x", 1}}, 2}}, {"e", JsonValue::array()}}, 2),
            "{\n  \"l\": [\n    {\n      \"x\": 1\n    },\n    2\n  ],\n"
            "  \"e\": []\n}");
  EXPECT_EQ(dumpJson(JsonValue(1.5e-7)), "1.5e-07");
  EXPECT_EQ(dumpJson(JsonValue(3), 2), "3");
  EXPECT_EQ(jsonQuote("a\x01"), "\"a\\u0001\"");
}

TEST(JsonTest, InvalidUtf8IsReplacedNotThrown) {
  // nlohmann's dump() throws type_error.316 here (an abort without
  // exceptions); an environment variable or a path may hold such bytes.
  EXPECT_EQ(jsonQuote("a\xff"), "\"a\xEF\xBF\xBD\"");
  EXPECT_EQ(dumpJson({{"k", "\xc3"}}, 2), "{\n  \"k\": \"\xEF\xBF\xBD\"\n}");
  EXPECT_FALSE(parseJson("\"a\xff\"").ok());
}

TEST(JsonTest, DumpParsesBack) {
  JsonValue value = {{"list", {{{"x", 1}}, "text\n"}}, {"n", -3}};
  for (int indent : {-1, 0, 2}) {
    Expected<JsonValue> parsed = parseJson(dumpJson(value, indent));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    EXPECT_EQ(*parsed, value);
  }
}

} // namespace
