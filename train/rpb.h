// rpb.h: everything a user of the library includes (core, and the nn, optim and train layers as they grow).
#pragma once

#include <cmath>

#include "core/core.h"
#include "nn/init.h"
#include "optim/sgd.h"
#include "train/version.h"
