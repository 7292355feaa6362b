// rpb.h: everything a user of the library includes (core, nn, optim, train).
#pragma once

#include <cmath>

#include "core/core.h"
#include "nn/attention.h"
#include "nn/generate.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/position.h"
#include "nn/transformer.h"
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "train/io/input_file.h"
#include "train/io/version.h"
#include "train/run/output_file.h"
