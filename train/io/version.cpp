#include "train/io/version.h"

namespace rpb {
const char* version() { return RPB_VERSION; }
}  // namespace rpb
