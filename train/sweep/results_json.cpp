// rpb/train/sweep/results_json.cpp: see results_json.h.
#include "train/sweep/results_json.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/error.h"
#include "train/run/eval_record.h"

namespace rpb {

namespace {
SweepResultsRow row_of(const MethodResult& m) {
  SweepResultsRow row;
  row.task = m.task;
  row.method = m.method.name();
  row.scheme = m.method.scheme;
  row.label = m.shown_label();
  row.settings = m.method.settings;
  row.position_params = m.position_params;
  row.eval_stride = m.eval_stride;
  row.optimal_perplexity = m.optimal_ppl;
  row.runs = m.runs;
  row.runs.resize(m.ppl.size());  // one per seed (a result built without runs: empty records)
  row.perplexity = m.ppl;
  row.nll = m.nll;
  for (auto* v : {&row.tokens, &row.bytes, &row.samples_per_depth}) v->resize(m.ppl.size());
  row.attention.resize(m.ppl.size());
  row.accuracy.resize(m.ppl.size());
  row.token_accuracy.resize(m.ppl.size());
  row.depth_accuracy.resize(m.ppl.size());
  row.trained_accuracy = m.trained_accuracy;
  row.learned_threshold = m.learned_threshold;
  for (std::size_t s = 0; s < m.ppl.size(); ++s)
    for (std::size_t j = 0; j < m.ppl[s].size(); ++j) {
      row.tokens[s].push_back(m.nll[s][j] ? m.tokens[s][j] : 0);
      row.attention[s].push_back(m.attention_at(s, j));
      row.bytes[s].push_back(m.nll[s][j] ? m.bytes_at(s, j) : 0);
      row.accuracy[s].push_back(m.accuracy_at(s, j));
      row.token_accuracy[s].push_back(m.token_accuracy_at(s, j));
      row.depth_accuracy[s].push_back(m.depth_accuracy_at(s, j));
      row.samples_per_depth[s].push_back(m.samples_per_depth_at(s, j));
    }
  std::vector<std::optional<data::BinnedPositionLoss>> by_position;
  for (std::size_t j = 0; j < m.lengths.size(); ++j)
    if (const data::PositionLoss p = m.pooled_position_loss(j); !p.empty())
      by_position.resize(m.lengths.size()), by_position[j] = data::binned(p, kPositionLossBins);
  row.position_loss = std::move(by_position);
  return row;
}

Json numbers(const std::vector<std::optional<double>>& v) {
  Json out = Json::array();
  for (const auto& x : v) out.push_back(json_number(x));
  return out;
}

// [[layer 0's heads], [layer 1's heads], ...].
Json per_layer(const std::vector<std::vector<double>>& v) {
  Json out = Json::array();
  for (const auto& layer : v) out.push_back(numbers(std::vector<std::optional<double>>(layer.begin(), layer.end())));
  return out;
}

Json attention_json(const AttentionDiagnostics& a) {
  if (a.empty()) return nullptr;
  return {{"mean_distance", per_layer(a.mean_distance)},
          {"entropy", per_layer(a.entropy)},
          {"mean_distance_overall", json_number(a.mean_distance_overall())},
          {"entropy_overall", json_number(a.entropy_overall())}};
}

// [[cell(s, j) per length j] per seed s], the shape of m.perplexity.
template <typename Cell>
Json per_seed(const SweepResultsRow& m, Cell cell) {
  Json out = Json::array();
  for (std::size_t s = 0; s < m.perplexity.size(); ++s) {
    Json lengths = Json::array();
    for (std::size_t j = 0; j < m.perplexity[s].size(); ++j) lengths.push_back(cell(s, j));
    out.push_back(std::move(lengths));
  }
  return out;
}

// [{"seed": 0, "folder": ..., "config_digest": ..., "checkpoint": ..., "checkpoint_sha256": ... | null}, ...].
Json runs_json(const std::vector<SweepRunRecord>& runs, const std::vector<uint64_t>& seeds) {
  Json out = Json::array();
  for (std::size_t s = 0; s < runs.size(); ++s) {
    const SweepRunRecord& r = runs[s];
    out.push_back({{"seed", s < seeds.size() ? Json(seeds[s]) : Json(nullptr)},
                   {"folder", r.folder},
                   {"config_digest", r.config_digest},
                   {"checkpoint", r.checkpoint},
                   {"checkpoint_sha256", r.checkpoint_sha256.empty() ? Json(nullptr) : Json(r.checkpoint_sha256)}});
  }
  return out;
}

// A setting's value as its JSON type: a boolean, a number (null when not finite), a string or an array.
Json setting_json(const SettingValue& v) {
  return std::visit(
      [](const auto& x) -> Json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, double>) {
          return json_number(x);
        } else if constexpr (std::is_same_v<T, std::vector<SettingValue>>) {
          Json a = Json::array();
          for (const SettingValue& e : x) a.push_back(setting_json(e));
          return a;
        } else {
          return Json(x);
        }
      },
      v.value);
}

Json settings_json(const std::vector<ConfigSetting>& settings) {
  Json out = Json::object();
  for (const ConfigSetting& s : settings) out[s.key] = setting_json(s.value);
  return out;
}

// {"mean": [per length], "std": [...]}.
Json stats_json(const std::vector<std::optional<double>>& mean, const std::vector<std::optional<double>>& sd) {
  return {{"mean", numbers(mean)}, {"std", numbers(sd)}};
}

// A count cell: n, or null where it is 0 (not defined).
Json count_json(int64_t n) { return n > 0 ? Json(n) : Json(nullptr); }

// The rows' keys from "bytes" on (results_json.h): each null when the row's task has no such metric.
void add_metrics_json(const SweepResultsRow& m, const std::vector<int64_t>& multipliers, Json& row) {
  const std::optional<double> no_accuracy;
  const std::vector<double> no_depths;
  const auto bytes = [&](std::size_t s, std::size_t j) { return count_json(cell_or(m.bytes, s, j, int64_t(0))); };
  const auto bpb = [&](std::size_t s, std::size_t j) { return json_number(m.bits_per_byte(s, j)); };
  const auto accuracy = [&](std::size_t s, std::size_t j) {
    return json_number(cell_or(m.accuracy, s, j, no_accuracy));
  };
  const auto depths = [&](std::size_t s, std::size_t j) {
    const std::vector<double>& d = cell_or(m.depth_accuracy, s, j, no_depths);
    return d.empty() ? Json(nullptr) : numbers(std::vector<std::optional<double>>(d.begin(), d.end()));
  };
  const auto samples = [&](std::size_t s, std::size_t j) {
    return count_json(cell_or(m.samples_per_depth, s, j, int64_t(0)));
  };
  const bool with_bytes = m.has_bytes(), with_accuracy = m.has_accuracy();
  row["bytes"] = with_bytes ? per_seed(m, bytes) : Json(nullptr);
  row["bits_per_byte"] = with_bytes ? per_seed(m, bpb) : Json(nullptr);
  row["bits_per_byte_stats"] = with_bytes ? stats_json(m.bits_per_byte_mean(), m.bits_per_byte_std()) : Json(nullptr);
  row["accuracy"] = with_accuracy ? per_seed(m, accuracy) : Json(nullptr);
  row["depth_accuracy"] = with_accuracy ? per_seed(m, depths) : Json(nullptr);
  row["samples_per_depth"] = with_accuracy ? per_seed(m, samples) : Json(nullptr);
  row["accuracy_stats"] = with_accuracy ? stats_json(m.accuracy_mean(), m.accuracy_std()) : Json(nullptr);
  row["accuracy_every_seed_stats"] =
      with_accuracy ? stats_json(m.accuracy_every_seed_mean(), m.accuracy_every_seed_std()) : Json(nullptr);
  Json learned = Json::array();
  for (const bool l : m.learned()) learned.push_back(l);
  row["learned"] = with_accuracy ? learned : Json(nullptr);
  row["trained_accuracy"] = with_accuracy && !m.trained_accuracy.empty() ? numbers(m.trained_accuracy) : Json(nullptr);
  // An algorithmic task's per-token accuracy and score (its accuracy is then the exact match).
  const bool with_tokens = m.has_token_accuracy();
  const auto token = [&](std::size_t s, std::size_t j) { return json_number(m.token_accuracy_at(s, j)); };
  row["token_accuracy"] = with_tokens ? per_seed(m, token) : Json(nullptr);
  row["token_accuracy_stats"] =
      with_tokens ? stats_json(m.token_accuracy_mean(), m.token_accuracy_std()) : Json(nullptr);
  std::vector<std::optional<double>> scores;
  for (std::size_t s = 0; s < m.perplexity.size(); ++s) scores.push_back(m.score(s, multipliers));
  const auto score = m.score_stats(multipliers);
  row["score"] = with_tokens ? numbers(scores) : Json(nullptr);
  row["score_stats"] = with_tokens && score ? Json{{"mean", score->first}, {"std", score->second}} : Json(nullptr);
  if (!m.position_loss.empty()) {  // [length]: null | {"bin": positions per bin, "loss": [mean NLL | null per bin]}
    Json by_length = Json::array();
    for (const auto& b : m.position_loss)
      by_length.push_back(b ? Json{{"bin", b->width}, {"loss", numbers(b->loss)}} : Json(nullptr));
    row["position_loss"] = std::move(by_length);
  }
}

// A row's keys up to "mean_attention_distance" (an rpb-results-5 row's).
Json base_row_json(const SweepResultsRow& m, const std::vector<uint64_t>& seeds) {
  return {{"task", m.task},
          {"method", m.method},
          {"scheme", m.scheme},
          {"label", m.label},
          {"settings", settings_json(m.settings)},
          {"position_params", m.position_params},
          {"protocol", eval_protocol_name(m.eval_stride)},
          {"eval_stride", m.eval_stride > 0 ? Json(m.eval_stride) : Json(nullptr)},
          {"runs", runs_json(m.runs, seeds)},
          {"optimal_perplexity", json_number(m.optimal_perplexity)},
          {"perplexity", per_seed(m, [&](std::size_t s, std::size_t j) { return json_number(m.perplexity[s][j]); })},
          {"nll", per_seed(m, [&](std::size_t s, std::size_t j) { return json_number(m.nll[s][j]); })},
          {"tokens", per_seed(m, [&](std::size_t s, std::size_t j) { return m.nll[s][j] ? Json(m.tokens[s][j]) : Json(); })},
          {"mean", numbers(m.perplexity_mean())},
          {"std", numbers(m.perplexity_std())},
          {"attention", per_seed(m, [&](std::size_t s, std::size_t j) { return attention_json(m.attention[s][j]); })},
          {"mean_attention_distance", stats_json(m.distance_mean(), m.distance_std())}};
}

Json row_json(const SweepResultsRow& m, const SweepResults& r) {
  Json row = base_row_json(m, r.seeds);
  add_metrics_json(m, r.multipliers, row);
  return row;
}

// ---- reading ----

std::vector<std::vector<double>> read_per_layer(const JsonIn& in) {
  std::vector<std::vector<double>> out(in.size());
  for (std::size_t l = 0; l < out.size(); ++l)
    for (std::size_t h = 0; h < in[l].size(); ++h) out[l].push_back(in[l][h].number_or_nan());
  return out;
}

AttentionDiagnostics read_attention(const JsonIn& in) {
  AttentionDiagnostics a;
  if (in.is_null()) return a;
  a.mean_distance = read_per_layer(in["mean_distance"]);
  a.entropy = read_per_layer(in["entropy"]);
  bool same_shape = a.mean_distance.size() == a.entropy.size() && !a.mean_distance.empty();
  for (std::size_t l = 0; same_shape && l < a.entropy.size(); ++l)
    same_shape = a.mean_distance[l].size() == a.entropy[l].size() && !a.entropy[l].empty();
  if (!same_shape) in.fail("\"mean_distance\" and \"entropy\" must have the same layers and heads, at least one");
  return a;
}

// [[read(cell) per length] per seed], `seeds` x `lengths`.
template <typename Read>
auto read_per_seed(const JsonIn& in, std::size_t seeds, std::size_t lengths, Read read) {
  std::vector<std::vector<decltype(read(in))>> out(seeds);
  if (in.size() != seeds) in.fail("expected " + std::to_string(seeds) + " seeds, found " + std::to_string(in.size()));
  for (std::size_t s = 0; s < seeds; ++s) {
    const JsonIn seed = in[s];
    if (seed.size() != lengths)
      seed.fail("expected " + std::to_string(lengths) + " lengths, found " + std::to_string(seed.size()));
    for (std::size_t j = 0; j < lengths; ++j) out[s].push_back(read(seed[j]));
  }
  return out;
}

std::vector<SweepRunRecord> read_runs(const JsonIn& in, const std::vector<uint64_t>& seeds) {
  if (in.size() != seeds.size())
    in.fail("expected " + std::to_string(seeds.size()) + " runs (one per seed), found " + std::to_string(in.size()));
  std::vector<SweepRunRecord> runs;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const JsonIn r = in[s];
    if (r["seed"].uint64() != seeds[s])
      r["seed"].fail("expected seed " + std::to_string(seeds[s]) + " (\"seeds\" at this place), found " +
                     std::to_string(r["seed"].uint64()));
    runs.push_back({r["folder"].string(), r["config_digest"].string(), r["checkpoint"].string(),
                    r["checkpoint_sha256"].string_or_empty()});
  }
  return runs;
}

SettingValue read_setting(const JsonIn& in) {
  const Json& j = in.json();
  SettingValue v;
  if (j.is_boolean()) {
    v.value = in.boolean();
  } else if (j.is_number_integer()) {
    v.value = in.int64();
  } else if (j.is_number_float() || j.is_null()) {
    v.value = in.number_or_nan();
  } else if (j.is_string()) {
    v.value = in.string();
  } else if (j.is_array()) {
    std::vector<SettingValue> elements;
    for (std::size_t i = 0; i < in.size(); ++i) elements.push_back(read_setting(in[i]));
    v.value = std::move(elements);
  } else {
    in.fail("expected a boolean, a number, a string or an array of them");
  }
  return v;
}

std::vector<ConfigSetting> read_settings(const JsonIn& in) {
  std::vector<ConfigSetting> out;
  for (const std::string& key : in.keys()) {
    SettingValue v = read_setting(in[key]);
    const std::string text = setting_text(v);
    out.push_back({key, std::move(v), text});
  }
  return out;
}

// A depth_accuracy cell: null (no accuracy) or kDepthBins numbers (a null among them: NaN).
std::vector<double> read_depths(const JsonIn& in) {
  std::vector<double> out;
  if (in.is_null()) return out;
  if (in.size() != static_cast<std::size_t>(kDepthBins))
    in.fail("expected " + std::to_string(kDepthBins) + " depth bins, found " + std::to_string(in.size()));
  for (std::size_t b = 0; b < in.size(); ++b) out.push_back(in[b].number_or_nan());
  return out;
}

// A count cell: null (0) or an integer >= 0.
int64_t read_count(const JsonIn& in) {
  if (in.is_null()) return 0;
  const int64_t n = in.int64();
  if (n < 0) in.fail("expected null or a count >= 0, found " + std::to_string(n));
  return n;
}

// A row's "position_loss": one entry per length, null or {"bin": width >= 1, "loss": [finite >= 0 | null per bin]}
// with at most kPositionLossBins bins.
std::vector<std::optional<data::BinnedPositionLoss>> read_binned_position_loss(const JsonIn& in, std::size_t lengths) {
  if (in.size() != lengths)
    in.fail("expected " + std::to_string(lengths) + " lengths, found " + std::to_string(in.size()));
  std::vector<std::optional<data::BinnedPositionLoss>> out(lengths);
  for (std::size_t j = 0; j < lengths; ++j) {
    if (in[j].is_null()) continue;
    data::BinnedPositionLoss b;
    b.width = in[j]["bin"].int64();
    if (b.width < 1) in[j]["bin"].fail("expected at least 1 position per bin, found " + std::to_string(b.width));
    const JsonIn loss = in[j]["loss"];
    if (loss.size() == 0 || loss.size() > static_cast<std::size_t>(kPositionLossBins))
      loss.fail("expected 1 to " + std::to_string(kPositionLossBins) + " bins, found " + std::to_string(loss.size()));
    for (std::size_t i = 0; i < loss.size(); ++i) {
      const std::optional<double> v = loss[i].optional_number();
      if (v && !(std::isfinite(*v) && *v >= 0)) loss[i].fail("expected a finite loss of at least 0 or null");
      b.loss.push_back(v);
    }
    out[j] = std::move(b);
  }
  return out;
}

// The per-length metrics of an rpb-results-6 row ("bytes", "accuracy", "depth_accuracy", "samples_per_depth"), each
// null for a row without it; a row of an earlier format (`present` false) has none. Either way every one is read to
// the shape of the perplexity: 0, nullopt, empty where none.
void read_row_metrics(const JsonIn& in, bool present, std::size_t seeds, std::size_t lengths, SweepResultsRow& m) {
  const auto shape = [&](auto& v, const auto& none) { v.assign(seeds, std::vector(lengths, none)); };
  shape(m.bytes, int64_t(0));
  shape(m.accuracy, std::optional<double>());
  shape(m.depth_accuracy, std::vector<double>());
  shape(m.samples_per_depth, int64_t(0));
  shape(m.token_accuracy, std::optional<double>());
  if (!present) return;
  if (!in["bytes"].is_null()) m.bytes = read_per_seed(in["bytes"], seeds, lengths, read_count);
  const auto number = [](const JsonIn& x) { return x.optional_number(); };
  if (!in["accuracy"].is_null()) m.accuracy = read_per_seed(in["accuracy"], seeds, lengths, number);
  if (!in["depth_accuracy"].is_null())
    m.depth_accuracy = read_per_seed(in["depth_accuracy"], seeds, lengths, read_depths);
  if (!in["samples_per_depth"].is_null())
    m.samples_per_depth = read_per_seed(in["samples_per_depth"], seeds, lengths, read_count);
  if (in.has("token_accuracy") && !in["token_accuracy"].is_null())  // written since it exists
    m.token_accuracy = read_per_seed(in["token_accuracy"], seeds, lengths, number);
  if (in.has("position_loss")) m.position_loss = read_binned_position_loss(in["position_loss"], lengths);
  if (in.has("trained_accuracy") && !in["trained_accuracy"].is_null()) {  // written since it exists
    const JsonIn trained = in["trained_accuracy"];
    if (trained.size() != seeds)
      trained.fail("expected " + std::to_string(seeds) + " seeds, found " + std::to_string(trained.size()));
    for (std::size_t s = 0; s < seeds; ++s) m.trained_accuracy.push_back(trained[s].optional_number());
  }
}

// What a results.json of format `format` holds besides the keys of every format: rpb-results-3's provenance and
// runs, -4's schemes, -5's protocol, -6's per-length metrics (bytes, accuracy).
struct FormatKeys {
  bool runs = false, scheme = false, protocol = false, metrics = false;
  bool labels = false;  // rpb-results-7's: a row's "label" is the sweep's (its [sweep] labels), "task_labels"
};

SweepResultsRow read_row(const JsonIn& in, const std::vector<uint64_t>& seed_list, std::size_t lengths,
                         int64_t largest_multiplier, const FormatKeys& keys) {
  const std::size_t seeds = seed_list.size();
  SweepResultsRow m;
  m.task = in["task"].string();
  m.method = in["method"].string();
  if (keys.scheme) m.scheme = in["scheme"].string();
  m.label = in["label"].string();
  if (in.has("settings")) m.settings = read_settings(in["settings"]);
  // Before rpb-results-7 every label was a default one: made again as labels are made now (of the method's own
  // settings: those the sweep's config set for every row are not in the file).
  if (!keys.labels && !m.scheme.empty()) m.label = SweepMethod{m.method, m.scheme, m.settings}.label(largest_multiplier);
  m.position_params = in["position_params"].int64();
  if (keys.protocol && !in["eval_stride"].is_null()) {
    m.eval_stride = in["eval_stride"].int64();
    if (m.eval_stride < 1) in["eval_stride"].fail("expected null (nonoverlapping) or a stride >= 1");
  }
  if (keys.protocol && in["protocol"].string() != eval_protocol_name(m.eval_stride))
    in["protocol"].fail("\"" + in["protocol"].string() + "\" disagrees with \"eval_stride\"; expected \"" +
                        eval_protocol_name(m.eval_stride) + "\"");
  if (keys.runs) m.runs = read_runs(in["runs"], seed_list);
  m.optimal_perplexity = in["optimal_perplexity"].optional_number();
  const auto number = [](const JsonIn& x) { return x.optional_number(); };
  m.perplexity = read_per_seed(in["perplexity"], seeds, lengths, number);
  m.nll = read_per_seed(in["nll"], seeds, lengths, number);
  m.tokens = read_per_seed(in["tokens"], seeds, lengths,
                           [](const JsonIn& x) { return x.is_null() ? int64_t(0) : x.int64(); });
  m.attention = read_per_seed(in["attention"], seeds, lengths, read_attention);
  read_row_metrics(in, keys.metrics, seeds, lengths, m);
  return m;
}

}  // namespace

const std::vector<SweepMetric>& sweep_metrics() {
  // The fields row_json writes: "perplexity" [[ppl per length] per seed], "attention" [[{...} per length] per seed],
  // "bits_per_byte" and "accuracy" [[x per length] per seed] (null in a row whose task has none), "learned" [per seed].
  static const std::vector<SweepMetric> metrics = {
      {"perplexity", "perplexity", "", true, "perplexity", "", "optimal_perplexity", "", 1.0, std::nullopt},
      {"mean_attention_distance", "mean attention distance", "positions", true, "attention", "mean_distance_overall",
       "", "", 0.0, std::nullopt},
      {"attention_entropy", "attention entropy", "nats", false, "attention", "entropy_overall", "", "", 0.0,
       std::nullopt},
      {"bits_per_byte", "loss", "bits per byte", false, "bits_per_byte", "", "", "", 0.0, std::nullopt},
      {"accuracy", "exact-match accuracy", "%", false, "accuracy", "", "", "learned", 0.0, 1.0, 100.0},
      {"accuracy_every_seed", "exact-match accuracy, every seed (learned or not)", "%", false, "accuracy", "", "", "",
       0.0, 1.0, 100.0, /*on_request=*/true},
      {"token_accuracy", "per-token accuracy", "%", false, "token_accuracy", "", "", "", 0.0, 1.0, 100.0}};
  return metrics;
}

bool row_holds(const Json& row, const SweepMetric& metric) {
  const auto seeds = row.find(metric.field);
  if (seeds == row.end() || !seeds->is_array()) return false;
  for (const Json& seed : *seeds)
    for (const Json& cell : seed.is_array() ? seed : Json::array()) {
      const Json* value = &cell;
      if (!metric.entry.empty()) {
        const auto it = cell.is_object() ? cell.find(metric.entry) : cell.end();
        if (!cell.is_object() || it == cell.end()) continue;
        value = &*it;
      }
      if (value->is_number()) return true;
    }
  return false;
}

SweepResults sweep_results(const SweepResult& r, const Provenance& provenance) {
  SweepResults out;
  out.provenance = provenance;
  out.name = r.name;
  out.train_length = r.train_length;
  out.multipliers = r.multipliers;
  out.seeds = r.seeds;
  out.task_labels = r.task_labels;
  out.learned_threshold = r.learned_threshold;
  for (const MethodResult& m : r.rows) out.rows.push_back(row_of(m));
  return out;
}

Json sweep_results_object(const SweepResults& r) {
  Json rows = Json::array();
  for (const SweepResultsRow& m : r.rows) rows.push_back(row_json(m, r));
  return {{"format", kSweepResultsFormat},   {"provenance", provenance_object(r.provenance)},
          {"name", r.name},                  {"train_length", r.train_length},
          {"multipliers", r.multipliers},    {"seeds", r.seeds},
          {"task_labels", r.task_labels},    {"learned_threshold", r.learned_threshold},
          {"rows", std::move(rows)}};
}

SweepResults sweep_results_from_json(const Json& json, const std::string& source) {
  const JsonIn in(json, source);
  SweepResults r;
  r.format = in.has("format") ? in["format"].string() : std::string();
  FormatKeys keys;
  keys.labels = r.format == kSweepResultsFormat;
  keys.metrics = keys.labels || r.format == "rpb-results-6";
  keys.protocol = keys.metrics || r.format == "rpb-results-5";
  keys.scheme = keys.protocol || r.format == "rpb-results-4";
  keys.runs = keys.scheme || r.format == "rpb-results-3";  // provenance and the rows' runs
  if (!keys.runs && r.format != "rpb-results-2" && !r.format.empty())
    in["format"].fail("\"" + r.format + "\", rpb reads \"" + kSweepResultsFormat +
                      "\", \"rpb-results-6\", \"rpb-results-5\", \"rpb-results-4\", \"rpb-results-3\", \"rpb-results-2\" (and "
                      "results.json without a format)");
  if (keys.runs) r.provenance = provenance_from_json(in["provenance"]);
  r.name = in["name"].string();
  r.train_length = in["train_length"].int64();
  for (std::size_t j = 0; j < in["multipliers"].size(); ++j) r.multipliers.push_back(in["multipliers"][j].int64());
  for (std::size_t s = 0; s < in["seeds"].size(); ++s) r.seeds.push_back(in["seeds"][s].uint64());
  const int64_t largest = r.multipliers.empty() ? 0 : *std::max_element(r.multipliers.begin(), r.multipliers.end());
  for (std::size_t i = 0; i < in["rows"].size(); ++i)
    r.rows.push_back(read_row(in["rows"][i], r.seeds, r.multipliers.size(), largest, keys));
  if (keys.labels)
    for (const std::string& task : in["task_labels"].keys()) r.task_labels[task] = in["task_labels"][task].string();
  if (keys.labels && in.has("learned_threshold")) {
    r.learned_threshold = in["learned_threshold"].number_or_nan();
    if (!(r.learned_threshold > 0 && r.learned_threshold <= 1))
      in["learned_threshold"].fail("expected a share in (0, 1], found " + std::to_string(r.learned_threshold));
  }
  for (SweepResultsRow& row : r.rows) row.learned_threshold = r.learned_threshold;
  return r;
}

SweepResults read_sweep_results(const std::string& path) {
  const std::string what = "sweep results";
  return sweep_results_from_json(read_json_file(path, what, kMaxSweepResultsBytes), what + " " + path);
}

}  // namespace rpb
