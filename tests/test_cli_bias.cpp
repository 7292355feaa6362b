// `rpb bias`: run the binary and read what it prints (and the exit code).
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "test_util.h"
#include "cli/bias.h"
#include "core/tensor.h"
#include "train/io/json_text.h"

using rpb::testing::run_rpb;
using rpb::BiasOptions;
using rpb::live_memory_bytes;
using rpb::peak_memory_bytes;
using rpb::reset_peak_memory;
using rpb::run_bias_command;
namespace {
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("rpb bias --json prints seed 003's bucket matrix") {
  const auto r = run_rpb("bias --scheme t5 --num-buckets 8 --max-distance 16 --query-length 4 --key-length 4 --json");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"buckets\":[[0,5,6,6],[1,0,5,6],[2,1,0,5],[2,2,1,0]]"));
  CHECK(!has(r.out, "\"bias\""));  // t5's table is learned: no bias without a checkpoint
}

TEST_CASE("rpb bias --json writes a 300 x 300 T5 bucket matrix: JSON is bounded by what is safe to write") {
  // Routine to check against another implementation's bucket function; a table on the terminal stops at 128 x 128.
  const auto r = run_rpb("bias --scheme t5 --query-length 300 --key-length 300 --json");
  REQUIRE(r.code == 0);
  const rpb::Json j = rpb::Json::parse(r.out);
  const rpb::Json& b = j.at("buckets");
  REQUIRE(b.size() == 300);
  for (const rpb::Json& row : b) CHECK(row.size() == 300);
  CHECK(b[0][0] == 0);
  CHECK(b[0][299] == 31);  // bidirectional: a key 299 after its query, the upper half's last bucket
  CHECK(b[299][0] == 15);  // 299 before: the lower half's
  CHECK(b[150][151] == 17);
}

TEST_CASE("rpb bias prints t5 tables: causal, and a KV-cache row") {
  auto r = run_rpb("bias --scheme t5 --num-buckets 32 --max-distance 128 --query-length 4 --key-length 4");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "bidirectional"));
  CHECK(has(r.out, "   0  17  18  19\n"));
  // Causal, the last query of 200 keys: key 0 is 199 before it (bucket 31), the query itself is bucket 0.
  r = run_rpb("bias --scheme t5 --causal --query-length 1 --key-length 200 --query-offset 199 --json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"buckets\":[[31,"));
  CHECK(has(r.out, ",2,1,0]]"));
}

TEST_CASE("rpb bias prints the shaw index and the alibi and log_decay biases") {
  auto r = run_rpb("bias --scheme shaw --max-relative-position 2 --query-length 5 --key-length 5 --json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"buckets\":[[2,3,4,4,4],[1,2,3,4,4],[0,1,2,3,4],[0,0,1,2,3],[0,0,0,1,2]]"));

  // 2 heads: slopes 2^-4 and 2^-8; bias -m * |i - j|.
  r = run_rpb("bias --scheme alibi --heads 2 --query-length 3 --key-length 3 --json");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"bias\":[[[0,-0.0625,-0.125],[-0.0625,0,-0.0625],[-0.125,-0.0625,0]],"
                   "[[0,-0.00390625,-0.0078125],[-0.00390625,0,-0.00390625],[-0.0078125,-0.00390625,0]]]"));
  CHECK(!has(r.out, "\"buckets\""));
  r = run_rpb("bias --scheme alibi --heads 8 --query-length 2 --key-length 2");
  CHECK(r.code == 0);
  CHECK(has(r.out, "head 0 (slope 0.5)"));
  CHECK(has(r.out, "head 7 (slope 0.00390625)"));
  CHECK(has(r.out, " -0.5000"));

  // seed 001: lambda 0.3 -> -0.2079, -0.3296, -0.4159, -0.4828.
  r = run_rpb("bias --scheme log_decay --lambda 0.3 --query-length 5 --key-length 5");
  CHECK(r.code == 0);
  CHECK(has(r.out, "  0.0000 -0.2079 -0.3296 -0.4159 -0.4828\n"));
}

TEST_CASE("rpb bias prints FIRE's function input psi(i - j) / (psi(max(i, L)) + eps), at and past the threshold") {
  // c 0.1, L = L0 = 8: row 1 reads log(1.1) / log(1.8) = 0.1622, row 7 key 0 log(1.7) / log(1.8) = 0.9028.
  auto r = run_rpb("bias --scheme fire --heads 2 --fire-length 8 --query-length 8 --key-length 8");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK(has(r.out, "MLP 1 -> 32 -> 2"));
  CHECK(has(r.out, "  0.1622  0.0000  0.1622  0.3102"));
  CHECK(has(r.out, "  0.9028  0.7996  0.6898"));
  // A query at 16, past the threshold: its own normaliser log(2.6), so distance 1 reads log(1.1) / log(2.6) = 0.0997.
  r = run_rpb("bias --scheme fire --fire-length 8 --query-length 1 --key-length 17 --query-offset 16 --json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"function_input\":[[0.99999"));
  CHECK(has(r.out, ",0.0997"));
  CHECK(!has(r.out, "\"bias\""));  // the MLP is learned: its values need a checkpoint
}

TEST_CASE("rpb bias: schemes without a bias matrix say so and exit 0") {
  for (const std::string& s : rpb::nn::scheme_names(1)) {
    if (rpb::nn::find_scheme(s, 1)->kind == rpb::nn::PositionKind::additive_bias) continue;
    INFO(s);
    const auto r = run_rpb(std::string("bias --scheme ") + s);
    CHECK(r.code == 0);
    CHECK(has(r.out, "no bias matrix"));
    const auto j = run_rpb(std::string("bias --json --scheme ") + s);
    CHECK(j.code == 0);
    CHECK(!has(j.out, "\"bias\""));
    CHECK(!has(j.out, "\"buckets\""));
  }
}

TEST_CASE("rpb bias: bad values exit 2 and name the option") {
  auto r = run_rpb("bias --scheme t5 --num-buckets 31 --max-distance 128");
  CHECK(r.code == 2);
  CHECK(has(r.out, "num_buckets 31"));
  CHECK(has(r.out, "--num-buckets"));
  CHECK(run_rpb("bias --scheme t5 --num-buckets 31 --causal").code == 0);  // causal buckets need not be even

  r = run_rpb("bias --scheme t5 --num-buckets 32 --max-distance 6");
  CHECK(r.code == 2);
  CHECK(has(r.out, "max_distance 6 must be above max_exact 8"));
  CHECK(has(r.out, "--max-distance"));

  r = run_rpb("bias --scheme t5 --query-length 0");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--query-length 0"));
  r = run_rpb("bias --scheme alibi --key-length 0");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--key-length 0"));
  r = run_rpb("bias --scheme alibi --query-offset -3");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--query-offset"));

  r = run_rpb("bias --scheme t6");
  CHECK(r.code == 2);
  CHECK(has(r.out, "unknown scheme 't6'"));
  CHECK(has(r.out, "log_decay"));
  CHECK(has(r.out, "--scheme"));

  r = run_rpb("bias --scheme alibi --heads 0");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--heads"));
  r = run_rpb("bias --scheme shaw --max-relative-position 0");
  CHECK(r.code == 2);
  CHECK(has(r.out, "--max-relative-position"));
  r = run_rpb("bias --query-length abc");
  CHECK(r.code == 2);
}

TEST_CASE("run_bias_command writes to the given streams") {
  rpb::BiasOptions o;
  o.position.num_buckets = 8;
  o.position.max_distance = 16;
  o.query_length = 4;
  o.key_length = 4;
  o.json = true;
  std::ostringstream out, err;
  CHECK(rpb::run_bias_command(o, out, err) == 0);
  CHECK(out.str() == "{\"scheme\":\"t5\",\"kind\":\"additive_bias\","
                     "\"buckets\":[[0,5,6,6],[1,0,5,6],[2,1,0,5],[2,2,1,0]]}\n");
  CHECK(err.str().empty());
  o.position.num_buckets = 9;
  std::ostringstream out2, err2;
  CHECK(rpb::run_bias_command(o, out2, err2) == 2);
  CHECK(out2.str().empty());
  CHECK(has(err2.str(), "--num-buckets"));
}

TEST_CASE("rpb bias: sizes are capped like the config's keys, naming the flag, the value and the range") {
  struct Case {
    const char* args;
    const char* message;
  };
  const std::vector<Case> cases{
      {"--scheme alibi --heads 1000000000", "rpb bias: --heads 1000000000: expected an integer in [1, 1024]\n"},
      {"--query-length 1000000 --key-length 1000000",
       "rpb bias: --query-length 1000000: expected an integer in [1, 65536]\n"},
      {"--key-length 65537", "rpb bias: --key-length 65537: expected an integer in [1, 65536]\n"},
      {"--query-offset 9223372036854775807",
       "rpb bias: --query-offset 9223372036854775807: expected an integer in [0, 1099511627776]\n"},
      {"--query-offset 1099511627770 --query-length 8",
       "rpb bias: --query-offset 1099511627770 + --query-length 8 is past the largest position 1099511627776 (2^40)\n"},
      {"--scheme shaw --max-relative-position 9223372036854775807",
       "rpb bias: --max-relative-position 9223372036854775807: expected an integer in [1, 1048576]\n"},
      {"--max-distance 2305843009213693952",
       "rpb bias: --max-distance 2305843009213693952: expected an integer in [1, 1099511627776]\n"},
      {"--num-buckets 65538", "rpb bias: --num-buckets 65538: expected an integer in [2, 65536]\n"},
      // What is printed: at most 16384 values, per head for a fixed bias; as JSON, at most 2^22.
      {"--scheme t5 --query-length 200 --key-length 200",
       "rpb bias: 200 queries x 200 keys = 40000 values; at most 16384 are printed (e.g. 128 x 128; --json writes up "
       "to 4194304): lower --query-length, --key-length\n"},
      {"--scheme alibi --heads 2 --query-length 128 --key-length 128",
       "rpb bias: 2 heads x 128 queries x 128 keys = 32768 values; at most 16384 are printed (e.g. 128 x 128; --json "
       "writes up to 4194304): lower --query-length, --key-length or --heads\n"},
      {"--scheme t5 --query-length 2048 --key-length 2049 --json",
       "rpb bias: 2048 queries x 2049 keys = 4196352 values; at most 4194304 are written as JSON (e.g. 2048 x 2048): "
       "lower --query-length, --key-length\n"},
      {"--scheme alibi --heads 3 --query-length 1024 --key-length 2048 --json",
       "rpb bias: 3 heads x 1024 queries x 2048 keys = 6291456 values; at most 4194304 are written as JSON (e.g. "
       "2048 x 2048): lower --query-length, --key-length or --heads\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const auto r = run_rpb(std::string("bias ") + c.args);
    CHECK(r.code == 2);
    CHECK(r.out == c.message);
  }
  // Inside the caps: a learned table is built with one head (its values are not printed), an offset near the
  // largest position allocates only the printed rows, and t5's largest max_distance buckets at once.
  {
    BiasOptions o;
    o.position.heads = 1024;
    o.position.num_buckets = 65536;
    o.position.max_distance = int64_t{1} << 40;
    o.query_length = o.key_length = 128;
    o.query_offset = 1099511627000;
    std::ostringstream out, err;
    const std::size_t before = live_memory_bytes();
    reset_peak_memory();
    CHECK(run_bias_command(o, out, err) == 0);
    CHECK(peak_memory_bytes() - before < (4 << 20));  // not the (65536, 1024) table: 256 MiB
  }
  auto r = run_rpb("bias --scheme t5 --heads 1024 --num-buckets 65536 --max-distance 1099511627776 --query-length 128 "
                   "--key-length 128 --query-offset 1099511627000 --json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"buckets\":[[32767,"));  // every key far before its query: the lower half's last
  r = run_rpb("bias --scheme alibi --heads 1 --query-length 1 --key-length 2 --query-offset 1099511627775 --json");
  CHECK(r.code == 0);
  CHECK(has(r.out, "\"bias\":[[[-4294967295.9960938,-4294967295.9921875]]]"));  // slope 2^-8
  // log_decay's lambda has the config's range too.
  r = run_rpb("bias --scheme log_decay --lambda -1");
  CHECK(r.code == 2);
  CHECK(has(r.out, "lambda -1 must be in [0, 1e+06]"));
  CHECK(has(r.out, "--lambda"));
}
