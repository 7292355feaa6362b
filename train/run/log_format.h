// rpb/train/run/log_format.h: the one layout of every log line rpb writes.
#pragma once

#include <string>

namespace rpb {

/// The spdlog pattern of every log rpb writes (the terminal, a run's train.log, the lines `rpb eval` adds to it):
/// "[2026-11-24 22:16:11.123] [info] message", the local time to the millisecond, then the level. With more than
/// one rank (`size` > 1) "[rank r/n] " follows the time, so each line names its rank. `colour`: the level is
/// coloured where the sink shows colours (a terminal; spdlog's %^ .. %$).
std::string log_pattern(int rank = 0, int size = 1, bool colour = false);

}  // namespace rpb
