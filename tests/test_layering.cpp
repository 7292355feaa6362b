// The include direction of the library: each layer includes only itself and the layers below it,
// and a layer's internal headers only from inside it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;

namespace {

/// A folder of the library and the folders its files may include headers from. A sub-folder that is not a layer of
/// its own belongs to its parent's layer (nn/position/ is nn); train/'s sub-folders are layers, each with one job,
/// and the files at train/'s root are the training loop above them. Adding a layer is one row.
struct Layer {
  std::string folder;
  std::vector<std::string> may_include;
};

const std::vector<std::string> kEngine = {"core", "nn", "optim"};

std::vector<std::string> engine_and(std::vector<std::string> more) {
  more.insert(more.begin(), kEngine.begin(), kEngine.end());
  return more;
}

const std::vector<Layer> kLayers = {
    {"core", {"core"}},
    {"nn", {"core", "nn"}},
    {"optim", {"core", "nn", "optim"}},
    // train/, bottom up: file primitives; MPI; tasks and batches; configs and estimates; the checkpoint format;
    // run folders and records; the loop (train/ itself); sweeps of many runs.
    {"train/io", engine_and({"train/io"})},
    {"train/dist", engine_and({"train/io", "train/dist"})},
    {"train/data", engine_and({"train/io", "train/data"})},
    {"train/config", engine_and({"train/io", "train/data", "train/config"})},
    {"train/checkpoint", engine_and({"train/io", "train/data", "train/config", "train/checkpoint"})},
    {"train/run", engine_and({"train/io", "train/data", "train/config", "train/checkpoint", "train/run"})},
    {"train", engine_and({"train/io", "train/dist", "train/data", "train/config", "train/checkpoint", "train/run",
                          "train"})},
    {"train/sweep", engine_and({"train/io", "train/dist", "train/data", "train/config", "train/checkpoint",
                                "train/run", "train", "train/sweep"})},
    {"cli", engine_and({"train/io", "train/dist", "train/data", "train/config", "train/checkpoint", "train/run",
                        "train", "train/sweep", "cli"})},
};

/// Headers internal to their layer: files of other layers must not include them.
const std::vector<std::string> kInternalHeaders = {
    "core/ops/kernels.h",          "nn/position/common.h",           "nn/window_common.h",
    "train/checkpoint/hdf5_util.h", "train/checkpoint/hdf5_guard.h", "train/checkpoint/hdf5_vlen.h",
    "train/data/data_detail.h",    "train/config/toml_table.h", "train/config/config_detail.h",
    "train/checkpoint/checkpoint_metrics.h"};

/// The layer a path from the source root belongs to: the longest layer folder it lies in ("" for none).
std::string layer_of(const std::string& path) {
  std::string best;
  for (const Layer& l : kLayers)
    if (path.compare(0, l.folder.size() + 1, l.folder + "/") == 0 && l.folder.size() > best.size()) best = l.folder;
  return best;
}

bool is_source(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".h" || e == ".hpp" || e == ".cpp" || e == ".cc" || e == ".inl";
}

/// The header an #include line names ("" for other lines), as a path from the source root. A quoted
/// name is looked up next to the including file first, as the compiler does.
std::string included_header(const std::string& line, const fs::path& root, const fs::path& file) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) return "";
  const std::size_t end = line.find(line[i] == '"' ? '"' : '>', i + 1);
  if (end == std::string::npos) return "";
  const std::string name = line.substr(i + 1, end - i - 1);
  if (line[i] == '"') {
    const fs::path beside = file.parent_path() / name;
    if (fs::exists(beside)) return fs::relative(beside, root).lexically_normal().generic_string();
  }
  return fs::path(name).lexically_normal().generic_string();
}

/// One "file:line: ..." entry per include that breaks the rules, for every file under the layers' folders.
std::vector<std::string> layering_violations(const fs::path& root) {
  std::vector<std::string> out;
  for (const Layer& layer : kLayers) {
    const fs::path dir = root / layer.folder;
    if (!fs::is_directory(dir)) {
      out.push_back(layer.folder + "/: the folder of a layer is missing");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.is_regular_file() && is_source(entry.path()) &&
          layer_of(fs::relative(entry.path(), root).generic_string()) == layer.folder)
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string rel = fs::relative(file, root).generic_string();
      std::ifstream in(file);
      std::string line;
      for (int lineno = 1; std::getline(in, line); ++lineno) {
        // A tensor's insides (storage, offset, gradient slot) are core's: other layers use Tensor's methods.
        if (layer.folder != "core" && (line.find("TensorImpl") != std::string::npos || line.find(".impl()") != std::string::npos ||
                                       line.find("impl_ptr()") != std::string::npos))
          out.push_back(rel + ":" + std::to_string(lineno) + ": touches TensorImpl (core's alone)");
        const std::string header = included_header(line, root, file);
        const std::string folder = layer_of(header);
        const std::string where = rel + ":" + std::to_string(lineno) + ": includes " + header;
        if (header.empty() || folder.empty()) continue;  // the standard library, Eigen, ...
        bool allowed = false;
        for (const std::string& f : layer.may_include) allowed |= f == folder;
        std::string may;
        for (const std::string& f : layer.may_include) may += (may.empty() ? "" : ", ") + f;
        if (!allowed) out.push_back(where + " (" + layer.folder + " may include only " + may + ")");
        for (const std::string& internal : kInternalHeaders)
          if (header == internal && layer.folder != layer_of(internal))
            out.push_back(where + " (internal to " + layer_of(internal) + "/)");
      }
    }
  }
  return out;
}

/// The headers `file` (a path from the source root) includes that exist in the tree, as paths from the source root.
std::vector<std::string> includes_of(const fs::path& root, const std::string& file) {
  std::vector<std::string> out;
  std::ifstream in(root / file);
  std::string line;
  while (std::getline(in, line))
    if (const std::string h = included_header(line, root, root / file); !h.empty() && fs::exists(root / h))
      out.push_back(h);
  return out;
}

/// Include loops through a sub-folder of a layer (nn/position/ of nn): a chain of includes from a file of `sub`
/// through headers outside it back to `sub` or its `facade` (nn/position.h), one "a -> b -> c includes d" per
/// header that closes a loop. The folder then depends on files that depend on it (nn/position/registry.cpp ->
/// nn/transformer.h -> nn/attention.h -> nn/position.h).
std::vector<std::string> sub_folder_loops(const fs::path& root, const std::string& sub, const std::string& facade) {
  const auto inside = [&](const std::string& h) { return h == facade || h.compare(0, sub.size() + 1, sub + "/") == 0; };
  std::vector<std::string> starts;
  for (const auto& e : fs::recursive_directory_iterator(root / sub))
    if (e.is_regular_file() && is_source(e.path())) starts.push_back(fs::relative(e.path(), root).generic_string());
  std::sort(starts.begin(), starts.end());
  // Appended piecewise: GCC 12 at -O1 warns (-Warray-bounds, a false positive) on a + chain.
  const auto link = [](const std::string& a, const char* how, const std::string& b) {
    std::string s = a;
    s += how;
    s += b;
    return s;
  };
  std::map<std::string, std::string> chain;  // a header outside `sub` reached -> the chain that reached it
  std::vector<std::string> queue;
  for (const std::string& f : starts)
    for (const std::string& h : includes_of(root, f))
      if (!inside(h) && chain.emplace(h, link(f, " -> ", h)).second) queue.push_back(h);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const std::string h = queue[i];
    for (const std::string& next : includes_of(root, h)) {
      if (inside(next)) out.push_back(link(chain[h], " includes ", next));
      else if (chain.emplace(next, link(chain[h], " -> ", next)).second) queue.push_back(next);
    }
  }
  return out;
}

/// A file's unit: its path without the extension (cli/eval.h and cli/eval.cpp are the unit cli/eval).
std::string unit_of(const std::string& file) { return fs::path(file).replace_extension().generic_string(); }

/// The files of `folder` (not its sub-folders), each with the headers of `folder` it includes.
std::map<std::string, std::vector<std::string>> folder_includes(const fs::path& root, const std::string& folder) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& e : fs::directory_iterator(root / folder)) {
    if (!e.is_regular_file() || !is_source(e.path())) continue;
    const std::string file = fs::relative(e.path(), root).generic_string();
    std::vector<std::string>& headers = out[file];
    for (const std::string& h : includes_of(root, file))
      if (fs::path(h).parent_path().generic_string() == folder) headers.push_back(h);
  }
  return out;
}

/// Arrows back up among the units of one folder (`includes`: file -> the headers of the folder it includes): units
/// that include each other, directly or through other units, so that neither lies below the other (cli/commands.cpp
/// including cli/generate.h, whose cli/commands.h it includes back). One line per group of such units: the units,
/// then each include between two of them.
std::vector<std::string> unit_loops(const std::map<std::string, std::vector<std::string>>& includes) {
  std::map<std::string, std::set<std::string>> next;  // unit -> the other units its files include
  for (const auto& entry : includes) {
    std::set<std::string>& to = next[unit_of(entry.first)];
    for (const std::string& h : entry.second)
      if (unit_of(h) != unit_of(entry.first)) to.insert(unit_of(h));
  }
  std::map<std::string, std::set<std::string>> reach;  // unit -> the units it reaches through one include or more
  for (const auto& entry : next) {
    std::set<std::string>& seen = reach[entry.first];
    std::vector<std::string> stack(entry.second.begin(), entry.second.end());
    while (!stack.empty()) {
      const std::string u = stack.back();
      stack.pop_back();
      if (!seen.insert(u).second) continue;
      if (const auto it = next.find(u); it != next.end()) stack.insert(stack.end(), it->second.begin(), it->second.end());
    }
  }
  std::set<std::string> reported;
  std::vector<std::string> out;
  for (const auto& entry : reach) {
    if (reported.count(entry.first) || !entry.second.count(entry.first)) continue;
    std::set<std::string> group;  // the units that reach entry.first and that it reaches
    for (const std::string& u : entry.second)
      if (reach[u].count(entry.first)) group.insert(u);
    reported.insert(group.begin(), group.end());
    std::string units, links;
    for (const std::string& u : group) {
      units += units.empty() ? "" : ", ";
      units += u;
    }
    for (const auto& file : includes)
      for (const std::string& h : file.second)
        if (group.count(unit_of(file.first)) && group.count(unit_of(h)) && unit_of(h) != unit_of(file.first)) {
          links += links.empty() ? "" : ", ";
          links += file.first;
          links += " includes ";
          links += h;
        }
    out.push_back(units + " include each other: " + links);
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("layering: core, nn, optim, train's sub-folders, train and cli include only their own layer and the ones below") {
  const std::vector<std::string> violations = layering_violations(RPB_SOURCE_DIR);
  CHECK_MESSAGE(violations.empty(), "includes against the layering:\n" << joined(violations));
}

TEST_CASE("layering: the check reports upward includes and internal headers with file:line") {
  rpb::testing::TempDir tree("layering");
  for (const Layer& l : kLayers) fs::create_directories(tree.path / l.folder);
  write_file(tree.path / "core/ops/kernels.h", "#pragma once\n");
  write_file(tree.path / "core/ok.cpp", "#include \"core/ops/kernels.h\"\n#include <vector>\n");
  write_file(tree.path / "optim/ok.cpp", "#include \"nn/module.h\"\n#include <Eigen/Core>\n");
  write_file(tree.path / "nn/position/sub.cpp", "// up\n#include \"optim/adam.h\"\n");
  write_file(tree.path / "core/tensor.cpp", "#include \"core/tensor.h\"\n  #  include <train/rpb.h>\n");
  write_file(tree.path / "train/uses.cpp", "#include \"../core/ops/kernels.h\"\n");
  write_file(tree.path / "cli/main.cpp", "#include \"train/rpb.h\"\nvoid f(const rpb::Tensor& t) { t.impl().offset = 0; }\n");
  // Inside train/: a lower room reaching up, a room reaching into another's internal header, and the allowed ways.
  write_file(tree.path / "train/config/toml_table.h", "#pragma once\n");
  write_file(tree.path / "train/config/memory.cpp", "#include \"toml_table.h\"\n#include \"train/data/task.h\"\n");
  write_file(tree.path / "train/checkpoint/stored_model.cpp", "#include \"train/workload.h\"\n");
  write_file(tree.path / "train/run/record.cpp", "#include \"train/config/toml_table.h\"\n#include \"train/io/sha256.h\"\n");
  write_file(tree.path / "train/sweep/sweep.cpp", "#include \"train/trainer.h\"\n");
  write_file(tree.path / "train/trainer.cpp", "#include \"train/sweep/sweep.h\"\n#include \"train/run/latest.h\"\n");
  const std::vector<std::string> v = layering_violations(tree.path);
  INFO(joined(v));
  REQUIRE(v.size() == 7);
  CHECK(v[0] == "core/tensor.cpp:2: includes train/rpb.h (core may include only core)");
  CHECK(v[1] == "nn/position/sub.cpp:2: includes optim/adam.h (nn may include only core, nn)");
  CHECK(v[2] == "train/checkpoint/stored_model.cpp:1: includes train/workload.h (train/checkpoint may include only "
                "core, nn, optim, train/io, train/data, train/config, train/checkpoint)");
  CHECK(v[3] == "train/run/record.cpp:1: includes train/config/toml_table.h (internal to train/config/)");
  CHECK(v[4] == "train/trainer.cpp:1: includes train/sweep/sweep.h (train may include only core, nn, optim, train/io, "
                "train/dist, train/data, train/config, train/checkpoint, train/run, train)");
  CHECK(v[5] == "train/uses.cpp:1: includes core/ops/kernels.h (internal to core/)");
  CHECK(v[6] == "cli/main.cpp:2: touches TensorImpl (core's alone)");

  fs::remove_all(tree.path / "optim");
  CHECK(rpb::testing::contains(joined(layering_violations(tree.path)), "optim/: the folder of a layer is missing"));
}

TEST_CASE("layering: nn/position/ includes no nn/ header that includes it back (no include loop in nn)") {
  const std::vector<std::string> loops = sub_folder_loops(RPB_SOURCE_DIR, "nn/position", "nn/position.h");
  CHECK_MESSAGE(loops.empty(), "include loops through nn/position/:\n" << joined(loops));

  rpb::testing::TempDir tree("layering_loops");
  write_file(tree.path / "nn/position.h", "#include \"nn/position/scheme.h\"\n");
  write_file(tree.path / "nn/position/scheme.h", "#include \"nn/module.h\"\n");
  write_file(tree.path / "nn/module.h", "#pragma once\n");
  write_file(tree.path / "nn/attention.h", "#include \"nn/position.h\"\n");
  write_file(tree.path / "nn/transformer.h", "#include \"nn/attention.h\"\n");
  write_file(tree.path / "nn/position/registry.cpp", "#include \"nn/position.h\"\n#include \"nn/transformer.h\"\n");
  const std::vector<std::string> v = sub_folder_loops(tree.path, "nn/position", "nn/position.h");
  INFO(joined(v));
  REQUIRE(v.size() == 1);
  CHECK(v[0] == "nn/position/registry.cpp -> nn/transformer.h -> nn/attention.h includes nn/position.h");
}

TEST_CASE("layering: the files of cli/ include one way, no arrow back up between two of its units") {
  const std::vector<std::string> loops = unit_loops(folder_includes(RPB_SOURCE_DIR, "cli"));
  CHECK_MESSAGE(loops.empty(), "cli/ files that include each other:\n" << joined(loops));

  // The registry as it was (issue 44): the table and the bodies in cli/commands.*, included by the commands' headers
  // it includes back; a second loop through two more units.
  const std::map<std::string, std::vector<std::string>> before = {
      {"cli/commands.h", {}},
      {"cli/commands.cpp", {"cli/commands.h", "cli/generate.h", "cli/plot.h", "cli/eval.h"}},
      {"cli/generate.h", {"cli/commands.h"}},
      {"cli/generate.cpp", {"cli/generate.h"}},
      {"cli/plot.h", {"cli/commands.h"}},
      {"cli/eval.h", {}},
      {"cli/eval.cpp", {"cli/eval.h", "cli/runner.h"}},
      {"cli/runner.h", {}},
      {"cli/runner.cpp", {"cli/runner.h", "cli/table.h"}},
      {"cli/table.h", {"cli/eval.h"}},
      {"cli/main.cpp", {"cli/commands.h"}}};
  const std::vector<std::string> v = unit_loops(before);
  INFO(joined(v));
  REQUIRE(v.size() == 2);
  CHECK(v[0] == "cli/commands, cli/generate, cli/plot include each other: cli/commands.cpp includes cli/generate.h, "
                "cli/commands.cpp includes cli/plot.h, cli/generate.h includes cli/commands.h, cli/plot.h includes "
                "cli/commands.h");
  CHECK(v[1] == "cli/eval, cli/runner, cli/table include each other: cli/eval.cpp includes cli/runner.h, "
                "cli/runner.cpp includes cli/table.h, cli/table.h includes cli/eval.h");

  // The registry now: the type below every command, the table above them.
  const std::map<std::string, std::vector<std::string>> after = {
      {"cli/command.h", {}},
      {"cli/commands.cpp", {"cli/command.h", "cli/generate.h", "cli/plot.h"}},
      {"cli/generate.h", {"cli/command.h"}},
      {"cli/generate.cpp", {"cli/generate.h"}},
      {"cli/plot.h", {"cli/command.h"}},
      {"cli/main.cpp", {"cli/command.h"}}};
  CHECK(unit_loops(after).empty());

  // Read from files: a header that includes its includer's header back.
  rpb::testing::TempDir tree("layering_units");
  write_file(tree.path / "cli/command.h", "#pragma once\n#include \"cli/train.h\"\n");
  write_file(tree.path / "cli/train.h", "#pragma once\n#include \"cli/command.h\"\n#include <string>\n");
  write_file(tree.path / "cli/train.cpp", "#include \"train.h\"\n#include \"core/tensor.h\"\n");
  const std::vector<std::string> w = unit_loops(folder_includes(tree.path, "cli"));
  INFO(joined(w));
  REQUIRE(w.size() == 1);
  CHECK(w[0] == "cli/command, cli/train include each other: cli/command.h includes cli/train.h, cli/train.h includes "
                "cli/command.h");
}
