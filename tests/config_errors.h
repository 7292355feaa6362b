// tests/config_errors.h: the error of reading a config text from a file, its path shown as "F", as the config
// tests compare messages ("F:2:6: optim.lr = 0.0: expected ...").
#pragma once

#include <fstream>
#include <string>

#include "test_util.h"
#include "train/config/config.h"

namespace rpb::testing {

/// The error of load_config on a file holding `text`, with the file's path replaced by "F"; "" when it loads.
inline std::string config_file_error(const std::string& text) {
  TempDir tmp("config_file_error");
  const std::string path = tmp.file("run.toml");
  std::ofstream(path) << text;
  const std::string e = error_of([&] { load_config(path); });
  return e.rfind(path, 0) == 0 ? std::string("F").append(e, path.size()) : e;
}

}  // namespace rpb::testing
