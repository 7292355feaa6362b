// rpb/cli/common_options.cpp: the checkpoint argument, --max-memory, --device and --overwrite.
#include "cli/common_options.h"

#include "core/error.h"
#include "core/text.h"
#include "train/config/memory.h"

namespace rpb {

void add_checkpoint_argument(CLI::App& cmd, std::string& value) {
  cmd.add_option("checkpoint", value,
                 "a checkpoint .h5 file, a run folder (its latest checkpoint) or a run folder's `latest` file")
      ->required();
}

void add_device_option(CLI::App& cmd, std::string& value, const std::string& what) {
  cmd.add_option("--device", value, what)->check(CLI::IsMember({"cpu", "cuda"}));
}

void apply_device_option(const std::string& device, std::vector<std::string>& overrides) {
  if (!device.empty()) overrides.push_back("run.device=\"" + device + "\"");
}

void add_memory_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--max-memory", value,
                 "refuse a run whose estimated memory is larger: 8G, 512M, 1.5GiB (default: the available memory)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            try {
              parse_memory_size(text, "--max-memory");
              return std::string();
            } catch (const Error&) {
              return "expected a size such as 8G, 512M or 1073741824, found \"" + printable(text, 40) + "\"";
            }
          },
          "SIZE"));
}

void add_overwrite_option(CLI::App& cmd, bool& value) {
  cmd.add_flag("--overwrite", value,
               "move a run folder that may not be continued (trained with another config, see config_digest in its "
               "config.toml; for train without --resume, any checkpoint) aside to <folder>.old-<UTC time> (nothing "
               "is deleted) and train afresh");
}

void apply_memory_option(const std::string& value) {
  if (!value.empty()) set_memory_budget({parse_memory_size(value, "--max-memory"), "--max-memory " + printable(value, 40)});
  else if (const std::size_t available = available_memory()) set_memory_budget({available, "the available memory"});
}

}  // namespace rpb
