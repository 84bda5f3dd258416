//===- RunRecord.h - what a log says about the run that wrote it -*- C++
//-*-===//
//
// The first record of a log a run starts (not one it appends to on
// --resume) carries, besides its step and loss, which program wrote it and
// what each rank holds:
//   {"step":0,"loss":4.15,"run":{"model":"gpt.onnx","mesh":"dp=2,tp=2",
//    "ranks":4},"memory":[{"rank":0,"parameters":N,"optimizer_state":N,
//    "scratch":N},...]}
// `cleave report` draws the memory and refuses a log of another program
// than the plan. Every number is the program's own (deterministic: two
// runs of one program write the same record): the plan, not a
// measurement. What a rank measured it used varies from run to run and is
// printed apart, by --print-memory-peak (PeakMemory.h).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_RUNRECORD_H
#define CLEAVE_RUNTIME_RUNRECORD_H

#include "runtime/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cleave::rt {

/// Bytes one rank holds: its blocks of the parameters and of the state
/// tensors (optimizer and BatchNorm state), and its scratch arena.
struct RankMemory {
  int64_t parameters = 0, optimizerState = 0, scratch = 0;
};

/// Every rank's `mine`, in rank order (collective over the whole mesh of a
/// distributed program: every rank calls it).
std::vector<RankMemory> gatherRankMemory(const RankMemory &mine,
                                         const MeshSpec &mesh,
                                         bool distributed);

/// The mesh as `cleave compile --mesh` spells it ("dp=2,tp=2"; "" for one
/// rank).
std::string meshText(const MeshSpec &mesh);

/// `text` as a JSON string, quotes included (logs and traces).
std::string jsonString(const char *text);

/// The record's extra fields, starting with a comma: `,"run":{...},
/// "memory":[...]`.
std::string runRecordFields(const Program &program,
                            const std::vector<RankMemory> &ranks);

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_RUNRECORD_H
