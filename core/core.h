// rpb/core/core.h: the core library in one include.
#pragma once

#include "core/autograd.h"
#include "core/checked.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "core/text.h"
#include "core/unicode.h"
