// rpb/cli/command.h: the type of a row of `rpb`'s subcommand registry, and the registry that main, --help and the
// message for an unknown subcommand read. Each command's header includes this one; the table itself
// (cli/commands.cpp) includes every command's header, so the includes inside cli/ run one way (tests/test_layering.cpp).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace rpb {

/// What runs a parsed subcommand: returns the exit code; errors are thrown as rpb::Error (main reports
/// them and exits 1).
using CommandRunner = std::function<int()>;

/// One subcommand of `rpb`. Adding one: a function that adds its options and returns its runner (in the
/// command's own file) and a row of commands().
struct Command {
  const char* name;
  const char* help;
  /// Adds the command's arguments and options to `cmd`, bound to state the returned runner owns.
  CommandRunner (*add)(CLI::App& cmd);
};

/// Every subcommand, in the order `rpb --help` lists them (the table in cli/commands.cpp).
const std::vector<Command>& commands();

}  // namespace rpb
