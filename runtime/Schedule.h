//===- Schedule.h - learning-rate schedules ---------------------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR), shared by both targets.
// The semantics are cleave.lr_schedule's (see its ODS description).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_SCHEDULE_H
#define CLEAVE_RUNTIME_SCHEDULE_H

#include "runtime/ElementwiseBodies.h"

#include <cmath>
#include <cstdint>

namespace cleave::rt {

enum class Schedule { Constant, Linear, Cosine };

/// The learning-rate factor at `step` (counting from 0).
CLEAVE_HD inline float lrScheduleFactor(Schedule schedule, int64_t warmup,
                                        int64_t total, float minimum,
                                        int64_t step) {
  if (step < warmup)
    return static_cast<float>(step + 1) / static_cast<float>(warmup);
  if (schedule == Schedule::Constant)
    return 1.0f;
  if (step >= total)
    return minimum;
  double progress = static_cast<double>(step - warmup) /
                    static_cast<double>(total - warmup);
  double decay = schedule == Schedule::Linear
                     ? 1.0 - progress
                     : 0.5 * (1.0 + std::cos(M_PI * progress));
  return static_cast<float>(minimum + (1.0 - minimum) * decay);
}

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_SCHEDULE_H
