// rpb/train/run/log_format.cpp: see log_format.h.
#include "train/run/log_format.h"

namespace rpb {

std::string log_pattern(int rank, int size, bool colour) {
  std::string p = "[%Y-%m-%d %H:%M:%S.%e] ";
  if (size > 1) p += "[rank " + std::to_string(rank) + "/" + std::to_string(size) + "] ";
  return p + (colour ? "[%^%l%$] %v" : "[%l] %v");
}

}  // namespace rpb
