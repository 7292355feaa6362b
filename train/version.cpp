#include "train/version.h"

namespace rpb {
const char* version() { return RPB_VERSION; }
}  // namespace rpb
