#include "train/workload.h"

namespace rpb {

std::unique_ptr<Workload> make_workload(const RunConfig& config) { return make_lm_workload(config); }

}  // namespace rpb
