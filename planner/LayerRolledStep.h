//===- LayerRolledStep.h - a deep model's layout from a few layers -*- C++
//-*-===//
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

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace cleave::planner {

/// How far a prediction from fewer layers may be over the layout's own,
/// in step time and in memory: test/planner/layer-rolled.test measures it
/// (a pipeline of fewer than two layers per stage on a small model is the
/// least exact: its first stage's share of the layers shifts with the
/// stage count).
inline constexpr double kLayerRolledTimeTolerance = 0.10,
                        kLayerRolledMemoryTolerance = 0.20;

/// A layout of the model cut down to `layers` of its repeated layers.
struct LayerTemplate {
  PlanLayout layout;
  int64_t layers = 0;
};

/// The layouts `layout` is rolled out from (a pipeline with one chunk per
/// stage, 1F1B for the interleaved schedule): the same mesh with min(p, 3)
/// pipeline stages (p: `layout`'s), one and then two layers per stage, cut
/// before the layers named in `startNames`; or, where the layout's stages
/// hold fewer than two of the model's `totalLayers` layers each (the
/// compiler then cuts inside layers, and a stage whose layer began on
/// another stage keeps all of its activations), one layout: the fewest
/// stages (3 to 16) holding the same share of layers whose middle stages
/// hold every place a cut falls within a layer, cut by work as the full
/// model is.
std::vector<LayerTemplate>
layerTemplates(const PlanLayout &layout,
               const std::vector<std::string> &startNames, int64_t totalLayers);

/// The prediction of `layout` on the model with `totalLayers` repeated
/// layers from its templates' (`templates`, predicted as `predicted`):
/// marked estimated (Prediction::layerTemplateLayers), with no timeline,
/// collectives or tensors. With two templates, each stage is its kind's
/// template stage (first, middle, last) grown by its share of the layers;
/// with one, it is its kind's template stage (a middle stage's time the
/// middle stages' in turn, its memory the largest one's).
Prediction rollLayers(const PlanLayout &layout,
                      llvm::ArrayRef<LayerTemplate> templates,
                      llvm::ArrayRef<Prediction> predicted,
                      int64_t totalLayers);

/// " on N and 2N of the model's L identical layers" (" on N of the model's L
/// identical layers over S stages") for a prediction rolled out from fewer
/// layers, "" for another: what an estimate's reason adds.
std::string fewerLayersNote(const Prediction &p);

} // namespace cleave::planner

#endif // CLEAVE_PLANNER_LAYERROLLEDSTEP_H
