// t5's report (`rpb inspect`): each bucket's span of key - query found by bisection, equal to walking every offset,
// and fast whatever max_distance (issue 13: the walk took 8 s at 1e8 and overflowed at 2^61).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "nn/limits.h"
#include "nn/position.h"
#include "nn/position/table_scheme.h"
#include "test_util.h"

using namespace rpb;
using rpb::nn::report::RowSpan;
using rpb::testing::contains;
using rpb::testing::error_of;

namespace {

std::shared_ptr<nn::TableScheme> t5(int64_t num_buckets, int64_t max_distance, bool causal) {
  nn::PositionOptions o;
  o.scheme = "t5";
  o.num_buckets = num_buckets;
  o.max_distance = max_distance;
  o.causal = causal;
  Generator gen(0);
  return std::dynamic_pointer_cast<nn::TableScheme>(nn::make_position_scheme(o, gen));
}

// The report's former walk over every relative position -R .. R (R = max_distance + 1): the reference.
std::vector<RowSpan> walked_spans(int64_t num_buckets, int64_t max_distance, bool causal) {
  std::vector<RowSpan> r(static_cast<std::size_t>(num_buckets));
  const int64_t R = max_distance + 1;
  for (int64_t rp = -R; rp <= (causal ? 0 : R); ++rp) {
    RowSpan& x = r[static_cast<std::size_t>(nn::t5_bucket(rp, !causal, num_buckets, max_distance))];
    if (!x.used) x.lo = x.hi = rp, x.used = true;
    x.lo = std::min(x.lo, rp);
    x.hi = std::max(x.hi, rp);
    if (rp == -R) x.open_lo = true;
    if (!causal && rp == R) x.open_hi = true;
  }
  if (causal) r[0].open_hi = true, r[0].hi = 0;
  return r;
}

// Equal as the report prints them: which rows are read, their open ends, and every closed end.
void check_same(const std::vector<RowSpan>& got, const std::vector<RowSpan>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    CAPTURE(b);
    CHECK(got[b].used == want[b].used);
    if (!want[b].used) continue;
    CHECK(got[b].open_lo == want[b].open_lo);
    CHECK(got[b].open_hi == want[b].open_hi);
    if (!want[b].open_lo) CHECK(got[b].lo == want[b].lo);
    if (!want[b].open_hi) CHECK(got[b].hi == want[b].hi);
  }
}

}  // namespace

TEST_CASE("t5 row spans: the spans found by bisection equal the walk over every offset") {
  int combos = 0;
  for (const bool causal : {false, true})
    for (int64_t nb = 2; nb <= 66; ++nb) {
      if (!causal && (nb < 4 || nb % 2 != 0)) continue;
      const int64_t max_exact = causal ? nb / 2 : nb / 4;
      for (const int64_t md : {max_exact + 1, max_exact + 2, int64_t{10}, int64_t{17}, int64_t{50}, int64_t{128},
                               int64_t{129}, int64_t{500}, int64_t{1000}, int64_t{2999}}) {
        if (md <= max_exact) continue;
        CAPTURE(causal);
        CAPTURE(nb);
        CAPTURE(md);
        check_same(t5(nb, md, causal)->row_spans(), walked_spans(nb, md, causal));
        ++combos;
      }
    }
  CHECK(combos > 500);
}

TEST_CASE("t5 row spans and report: O(num_buckets) at the largest max_distance, no overflow") {
  const int64_t md = nn::limits::kMaxPosition;  // 2^40: the walk would visit 2^41 offsets
  for (const bool causal : {false, true}) {
    // A walk over the offsets would not end in any test's time (ctest's timeout fails it).
    const auto scheme = t5(32, md, causal);
    const std::vector<RowSpan> spans = scheme->row_spans();
    const std::string report = scheme->report("pos.t5.");
    // The far side reads the last bucket, beyond every finite distance; the exact buckets hold one offset each.
    CHECK(spans[causal ? 31 : 15].open_lo);
    CHECK(spans[1].lo == -1);
    CHECK(spans[1].hi == -1);
    if (!causal) CHECK(spans[31].open_hi);
    CHECK(contains(report, "max_distance 1099511627776"));
    CHECK(contains(report, "<= -"));
  }
  // Past the limit: an error naming the option, not a walk.
  CHECK(contains(error_of([&] { t5(32, md + 1, false); }), "max_distance 1099511627777 must be at most 1099511627776"));
  CHECK(contains(error_of([] { t5(int64_t{1} << 17, 128, false); }), "num_buckets 131072 must be at most 65536"));
}

TEST_CASE("position schemes: a line past the largest position or longer than a sequence is an error, not an overflow") {
  const int64_t far = nn::limits::kMaxPosition;
  CHECK(contains(error_of([&] { nn::t5_buckets(4, 4, far - 3, true, 32, 128); }),
                 "q_offset 1099511627773 + q_len 4 must be at most 1099511627776"));
  CHECK(contains(error_of([&] { nn::shaw_index(1, 4, INT64_MAX, 16); }), "q_offset 9223372036854775807 + q_len 1"));
  CHECK(contains(error_of([&] { t5(32, 128, true)->bias(nn::Positions::line(65537, 1)); }),
                 "q_len 65537 must be in [1, 65536]"));
  // At the largest position the buckets come out at once: one bucket per offset in the line, not per position.
  const Tensor b = nn::t5_buckets(2, 2, far - 2, true, 32, 128);
  CHECK(b.to_vector() == std::vector<double>{15, 15, 15, 15});
}
