// train/io/sha256.h, train/io/json_text.h and train/run/eval_record.h: digests, JSON text, the record's name and fields.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "train/io/json_text.h"
#include "train/io/sha256.h"
#include "train/run/eval_record.h"

using namespace rpb;

TEST_CASE("sha256: the FIPS 180-4 test vectors, across block boundaries") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("json_number writes null for what JSON lacks, json_text prints the shortest round-trip doubles") {
  CHECK(json_number(std::nullopt).is_null());
  CHECK(json_number(1.0 / 0.0).is_null());
  CHECK(json_number(std::nan("")).is_null());
  CHECK(json_text(Json{{"a\"b\n", 0.1}, {"x", json_number(-1.0 / 0.0)}}) == "{\n  \"a\\\"b\\n\": 0.1,\n  \"x\": null\n}\n");
}

TEST_CASE("eval record: its name says the checkpoint, the tokens and chosen lengths, n/a lengths are null") {
  EvalRecord r;
  r.checkpoint = "step_00000600.h5";
  r.train_length = 64;
  LengthResult a{64, 1, 1.5, 8192, {}}, b{1024, 16, std::nullopt, 0, {}};
  r.lengths = {a, b};
  CHECK(r.tokens() == 8192);
  CHECK(eval_record_name(r) == "step_00000600-8192.json");
  r.options.lengths = {64, 1024};
  CHECK(eval_record_name(r) == "step_00000600-8192-L64_1024.json");
  const Json json = Json::parse(eval_record_json(r));
  CHECK(json["format"] == "rpb-eval-4");
  CHECK(json["lengths"][1].dump() == R"({"length":1024,"multiplier":16,"nll":null,"perplexity":null,"tokens":null,)"
                                     R"("optimal_perplexity":null,"attention":null})");
  CHECK(json["lengths"][0]["nll"] == 1.5);
  CHECK(json["lengths"][0]["perplexity"] == std::exp(1.5));
  CHECK(json["lengths"][0]["tokens"] == 8192);
  CHECK(json["optimal_perplexity"].is_null());
  CHECK(json["entropy_rate"].is_null());
  CHECK(json["default_lengths"] == false);
}

TEST_CASE("eval record: each length carries its attention per layer and head, null where not measured") {
  EvalRecord r;
  r.checkpoint = "step_00000010.h5";
  LengthResult a{16, 1, 1.5, 64, {}}, b{32, 2, 1.6, 64, {}};
  a.attention.mean_distance = {{3.25, 1.5}, {0.5, 2.0}};
  a.attention.entropy = {{1.125, 0.25}, {0.75, 2.5}};
  r.lengths = {a, b};
  CHECK(a.attention.mean_distance_overall() == doctest::Approx(1.8125));
  CHECK(a.attention.entropy_overall() == doctest::Approx(1.15625));
  CHECK(!b.attention.mean_distance_overall());
  const Json json = Json::parse(eval_record_json(r));
  const Json& attention = json["lengths"][0]["attention"];
  REQUIRE(attention.size() == 4);
  CHECK(attention[0].dump() == R"({"layer":0,"head":0,"mean_distance":3.25,"entropy":1.125})");
  CHECK(attention[1].dump() == R"({"layer":0,"head":1,"mean_distance":1.5,"entropy":0.25})");
  CHECK(attention[3].dump() == R"({"layer":1,"head":1,"mean_distance":2.0,"entropy":2.5})");
  CHECK(json["lengths"][1]["attention"].is_null());  // length 32
}
