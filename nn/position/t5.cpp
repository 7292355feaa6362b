// t5: a learned (num_buckets, heads) table indexed by the HF transformers `_relative_position_bucket` of
// key - query. Bidirectional: half the buckets per sign, a key after its query in the upper half; causal:
// every future key in bucket 0. Exact below max_exact = num_buckets/4 (bidirectional) or /2 (causal), then
// log-spaced up to max_distance in float32, clamped to the last bucket. Init normal(0, init_std).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "nn/position/common.h"
#include "nn/position/table_scheme.h"

namespace rpb::nn {

namespace {

// The bucket checks, as OptionErrors naming the field: `rpb bias` and the config map them to what the user set.
void check_t5(const char* op, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  if (bidirectional)
    RPB_CHECK_OPTION(num_buckets >= 4 && num_buckets % 2 == 0, op, "num_buckets", "num_buckets ", num_buckets,
                     " must be even and at least 4 for bidirectional buckets (half per direction, a quarter exact)");
  else
    RPB_CHECK_OPTION(num_buckets >= 2, op, "num_buckets", "num_buckets ", num_buckets,
                     " must be at least 2 for causal buckets");
  position_detail::check_at_most(op, "num_buckets", num_buckets, limits::num_buckets.hi);
  position_detail::check_at_most(op, "max_distance", max_distance, limits::max_distance.hi);
  // bidirectional: (num_buckets / 2) / 2 == num_buckets / 4 for every integer num_buckets.
  const int64_t max_exact = bidirectional ? num_buckets / 4 : num_buckets / 2;
  RPB_CHECK_OPTION(max_distance > max_exact, op, "max_distance", "max_distance ", max_distance,
                   " must be above max_exact ", max_exact, bidirectional ? " (num_buckets/4)" : " (num_buckets/2)");
}

// HF `_relative_position_bucket` with the arguments already checked. `log_span` is
// float(log(double(max_distance) / max_exact)), which torch holds as a Python float.
int64_t t5_bucket_unchecked(int64_t relative_position, bool bidirectional, int64_t num_buckets, float log_span) {
  int64_t ret = 0;
  int64_t n = 0;
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) ret += num_buckets;  // key after query: the upper half
    n = relative_position < 0 ? -relative_position : relative_position;
  } else {
    n = relative_position < 0 ? -relative_position : 0;  // -min(rp, 0): every future key is bucket 0
  }
  const int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return ret + n;
  // Only here, where n >= max_exact >= 1, is the log finite: torch computes log(0) = -inf for the small
  // offsets and discards it with `where`, but casting -inf to an integer is undefined behaviour in C++.
  // float32 as torch: log(n.float() / max_exact) / log_span * (num_buckets - max_exact), truncated.
  const float scaled = std::log(static_cast<float>(n) / static_cast<float>(max_exact)) / log_span *
                       static_cast<float>(num_buckets - max_exact);
  const int64_t large = max_exact + static_cast<int64_t>(scaled);
  return ret + std::min(large, num_buckets - 1);
}

float t5_log_span(bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  const int64_t max_exact = bidirectional ? num_buckets / 4 : num_buckets / 2;
  return static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
}

// The far end of an open span.
constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();
// The largest distance the span search looks at: past max_distance (at most limits::kMaxPosition) every
// distance reads the last bucket of its side, and sign * kFar cannot overflow.
constexpr int64_t kFar = int64_t{1} << 62;

// Calls run(bucket, first, last, open) for each run of distances n = first .. last (n >= from) that share a
// bucket under the non-decreasing `bucket_of`, in order; the last run is open (it reaches kFar). Each run's
// end is found by galloping and bisection, so the cost is O(log(run length)) per bucket, not per distance.
template <typename BucketOf, typename Run>
void for_each_bucket_run(int64_t from, BucketOf&& bucket_of, Run&& run) {
  const int64_t last_bucket = bucket_of(kFar);
  for (int64_t first = from;;) {
    const int64_t b = bucket_of(first);
    if (b == last_bucket) return run(b, first, kFar, true);
    int64_t in = first, step = 1;  // bucket_of(in) == b; find out > in with bucket_of(out) > b
    while (step < kFar - in && bucket_of(in + step) == b) in += step, step *= 2;
    int64_t out = step < kFar - in ? in + step : kFar;
    while (out - in > 1) {
      const int64_t mid = in + (out - in) / 2;
      (bucket_of(mid) == b ? in : out) = mid;
    }
    run(b, first, in, false);
    first = out;
  }
}

// The relative positions key - query that read each bucket, as HF's bucket function assigns them (it is
// non-decreasing in the distance on each side, so each bucket holds one run of distances).
std::vector<report::RowSpan> t5_row_spans(bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  check_t5("t5_row_spans", bidirectional, num_buckets, max_distance);
  const float log_span = t5_log_span(bidirectional, num_buckets, max_distance);
  std::vector<report::RowSpan> spans(static_cast<std::size_t>(num_buckets));
  // Both sides: key before or at the query (sign -1, from distance 0) and, bidirectional, key after it (sign +1,
  // from distance 1; causal buckets put every future key in bucket 0 with the query itself).
  for (const int sign : {-1, 1}) {
    if (sign == 1 && !bidirectional) break;
    for_each_bucket_run(sign == 1 ? 1 : 0, [&](int64_t n) {
      return t5_bucket_unchecked(sign * n, bidirectional, num_buckets, log_span);
    }, [&](int64_t bucket, int64_t first, int64_t last, bool open) {
      report::RowSpan& x = spans[static_cast<std::size_t>(bucket)];
      if (sign == 1) x = {first, open ? kUnbounded : last, false, open, true};
      else x = {open ? -kUnbounded : -last, -first, open, false, true};
    });
  }
  if (!bidirectional) spans[0].hi = kUnbounded, spans[0].open_hi = true;
  return spans;
}

class T5Scheme final : public TableScheme {
 public:
  T5Scheme(const PositionOptions& o, Generator& gen) : TableScheme(o, o.num_buckets, gen, false) {}

  std::string title() const override { return "t5 buckets of key - query"; }
  std::string title_options() const override {
    return std::string(o_.causal ? "causal" : "bidirectional") + ", " + std::to_string(o_.num_buckets) +
           " buckets, max_distance " + std::to_string(o_.max_distance);
  }

  // Each row's span by bisection over the monotone bucket function (t5_row_spans): O(num_buckets x log
  // max_distance), not one step per offset.
  std::vector<report::RowSpan> row_spans() const override {
    return t5_row_spans(!o_.causal, o_.num_buckets, o_.max_distance);
  }

 private:
  int64_t row_of(int64_t relative_position) const {
    return t5_bucket(relative_position, !o_.causal, o_.num_buckets, o_.max_distance);
  }
  Tensor make_index(const Positions& p) const override {
    return t5_buckets(p.q_len, p.k_len, p.q_offset, !o_.causal, o_.num_buckets, o_.max_distance);
  }
  std::vector<int64_t> relative_rows(const Positions& p) const override {
    std::vector<int64_t> v(static_cast<std::size_t>(p.q_len + p.k_len - 1));
    for (std::size_t m = 0; m < v.size(); ++m) v[m] = row_of(static_cast<int64_t>(m) - (p.q_offset + p.q_len - 1));
    return v;
  }
  std::string report_title() const override {
    return std::string("T5 buckets (") + (o_.causal ? "causal" : "bidirectional") + ", " +
           std::to_string(o_.num_buckets) + " buckets, max_distance " + std::to_string(o_.max_distance) + ")" +
           (o_.causal ? "; future keys share bucket 0 and are masked" : "");
  }
};

}  // namespace

namespace {

void validate_t5(const PositionOptions& o) {
  check_t5("t5", !o.causal, o.num_buckets, o.max_distance);
  position_detail::check_init_std(o);
}
std::shared_ptr<PositionScheme> make_t5(const PositionOptions& o, Generator& gen) {
  return std::make_shared<T5Scheme>(o, gen);
}

// The registry row (nn/position/scheme.h).
const SchemeRegistrar t5_row({.name = "t5", .dims = 1, .kind = PositionKind::additive_bias, .label = "T5 bias",
     .description = "T5's learned bias per log-spaced bucket of key - query", .per_layer = true,
     .parameters = [](const PositionOptions& o) { return position_detail::per_head(o, o.num_buckets); },
     .max_length = position_detail::unbounded, .length_option = nullptr, .validate = validate_t5, .make = make_t5,
     .window_bias = WindowBias::none, .row_table = true, .rank = 40,
     .reads = {"num_buckets", "max_distance", "init_std"},
     .bidirectional = "T5's bidirectional buckets (HF T5Attention, bidirectional=True): half the buckets per sign of "
                      "key - query"});

}  // namespace

int64_t t5_bucket(int64_t relative_position, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  check_t5("t5_bucket", bidirectional, num_buckets, max_distance);
  RPB_CHECK(relative_position != std::numeric_limits<int64_t>::min(), "t5_bucket", "relative_position ",
            relative_position, " has no absolute value in int64");
  return t5_bucket_unchecked(relative_position, bidirectional, num_buckets,
                             t5_log_span(bidirectional, num_buckets, max_distance));
}

Tensor t5_buckets(int64_t q_len, int64_t k_len, int64_t q_offset, bool bidirectional, int64_t num_buckets,
                  int64_t max_distance) {
  position_detail::check_line("t5_buckets", q_len, k_len, q_offset);
  check_t5("t5_buckets", bidirectional, num_buckets, max_distance);
  const float log_span = t5_log_span(bidirectional, num_buckets, max_distance);
  // relative position = key - query = c - (q_offset + r) spans the q_len + k_len - 1 values from
  // lo = -(q_offset + q_len - 1) up: bucket each once, then fill the (q, k) matrix.
  const int64_t lo = -(q_offset + q_len - 1);
  std::vector<int64_t> by_offset(static_cast<std::size_t>(q_len + k_len - 1));
  for (std::size_t m = 0; m < by_offset.size(); ++m)
    by_offset[m] = t5_bucket_unchecked(lo + static_cast<int64_t>(m), bidirectional, num_buckets, log_span);
  std::vector<int64_t> v(static_cast<std::size_t>(q_len * k_len));
  for (int64_t r = 0; r < q_len; ++r)
    for (int64_t c = 0; c < k_len; ++c)
      v[static_cast<std::size_t>(r * k_len + c)] = by_offset[static_cast<std::size_t>(c - (q_offset + r) - lo)];
  return Tensor::indices({q_len, k_len}, v);
}


}  // namespace rpb::nn
