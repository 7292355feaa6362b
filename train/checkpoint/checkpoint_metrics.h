// rpb/train/checkpoint/checkpoint_metrics.h: a checkpoint's /metrics written and read (internal to train/checkpoint/:
// checkpoint.cpp writes and reads the rest of the layout, checkpoint.h documents it).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "train/checkpoint/hdf5_guard.h"
#include "train/checkpoint/metrics_row.h"

namespace rpb {

/// /metrics/{step,loss,lr,grad_norm,tokens_per_sec,elapsed_s} and a column per validation length
/// (valid_loss@<length>, valid_accuracy@<length>; NaN where a row has none) under `root`; errors name `op`.
void write_metrics(hid_t root, const std::vector<MetricsRow>& rows, const std::string& op);

/// The rows of /metrics under `root`, every dataset opened through `r`: the columns must be 1-D and as long as
/// /metrics/step (elapsed_s and the validation columns may be missing: older files), the steps not negative.
std::vector<MetricsRow> read_metrics(hdf5::SafeReader& r, hid_t root);

/// Refuses a negative step (a step counts updates from 0: a negative one is damage): an error of `op` naming `what`.
void check_step(int64_t step, const std::string& what, const std::string& op);

}  // namespace rpb
