// rpb/train/config/document.h: the effective config as a TOML document, and typed settings in and out of TOML
// (internal to train/config: config.cpp reads documents, sweep_method.cpp parses a sweep's methods, run_identity.cpp
// derives identities).
#pragma once

#include <toml++/toml.h>

#include <string>

#include "train/config/config.h"
#include "train/config/toml_table.h"

namespace rpb {

/// RunConfig::document: every key the readers accepted, with its final value; the [sweep] table as written.
/// RunConfig::text is toml_config::document_text(effective).
struct ConfigDocument {
  toml::table effective;
};

/// A typed setting's value as TOML, in a table at "value" (the shape toml_config::parse_value gives).
toml::table setting_table(const SettingValue& v);

/// A TOML value as a typed setting's value; a table or a date throws rpb::Error from `from`.
SettingValue setting_value(const toml::node& n, const std::string& from);

/// What makes `v` unfit for a path in the run's file system ("a control character (U+001B)", "300 bytes"), or "":
/// a `component` (run.name, a sweep method) is one folder name; any value is valid UTF-8 free of controls and of
/// format and separator characters, and at most `max_bytes` long.
std::string path_problem(const std::string& v, std::size_t max_bytes, bool component);

/// One of sweep.methods, "t5@max_distance=64@untrained=nearest", parsed for the sweep's dims: its scheme and its
/// typed settings; errors fail at sweep.methods.
SweepMethod parse_method(toml_config::Table& sweep, const std::string& text, int64_t dims);

}  // namespace rpb
