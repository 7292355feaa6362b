#include "train/workload.h"

namespace rpb {

std::unique_ptr<Workload> make_workload(const RunConfig& config) {
  return config.dims() == 2 ? make_grid_workload(config) : make_lm_workload(config);
}

}  // namespace rpb
