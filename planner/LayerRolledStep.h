//===- LayerRolledStep.h - a deep model's layout from a few layers -*- C++ -*-===//
//
// A model of L identical layers (RepeatedLayers.h) partitioned for a
// layout is, stage by stage, the ops before the layers (on the first
// stage), those after them (on the last), and a share of the layers:
// what a stage computes, holds, stashes and sends grows by one layer's
// worth per layer it holds. So the layout's prediction is rolled out from
// the same layout partitioned on the model cut down to a few layers: one
// and two layers per stage, on min(p, 3) stages (the first, a middle and
// the last stage; cut at the layers' starts). Each full stage is its kind
// of template stage with its share of the L layers, the shares being the
// cut by work the compiler makes (a fluid one: every stage's work equal,
// the first and last holding fewer layers for what they hold besides).
// This is how Megatron-LM's and Alpa's cost models reason (per layer);
// the search (Planner.h) predicts every layout of a deep model this way
// and partitions only the layouts that may be the fastest in full.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_PLANNER_LAYERROLLEDSTEP_H
#define CLEAVE_PLANNER_LAYERROLLEDSTEP_H

#include "planner/CostModel.h"
#include "planner/Planner.h"

#include <array>

namespace cleave::planner {

/// How far a prediction from fewer layers may be from the layout's own,
/// in step time and memory: test/planner/layer-rolled.test measures it.
inline constexpr double kLayerRolledTolerance = 0.10;

/// A layout of the model cut down to `layers` of its repeated layers.
struct LayerTemplate {
  PlanLayout layout;
  int64_t layers = 0;
};

/// The two layouts `layout` is rolled out from: the same mesh with
/// min(p, 3) pipeline stages (p: `layout`'s), one and then two layers
/// per stage, cut before the layers named in `startNames` (a pipeline
/// with one chunk per stage, 1F1B for the interleaved schedule).
std::array<LayerTemplate, 2>
layerTemplates(const PlanLayout &layout,
               const std::vector<std::string> &startNames);

/// The prediction of `layout` on the model with `totalLayers` repeated
/// layers from its templates' (layerTemplates: `one` and `two` layers
/// per stage): marked estimated (Prediction::layerTemplates), with no
/// timeline, collectives or tensors.
Prediction rollLayers(const PlanLayout &layout, const Prediction &one,
                      const Prediction &two, int64_t totalLayers);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_LAYERROLLEDSTEP_H
