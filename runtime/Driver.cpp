//===- Driver.cpp - the training loop around a generated step -------------===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). runProgram runs the
// components of a training run in order: start-up (RunStart.h), the
// tensors' memory (TensorStore.h), the data (DriverData.h), the files kept
// (RunOutputs.h) and the reports (RunReports.h), around the step loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/Collectives.h"
#include "runtime/DriverData.h"
#include "runtime/GlobalTensors.h"
#include "runtime/KernelSupport.h"
#include "runtime/PeakMemory.h"
#include "runtime/Program.h"
#include "runtime/RunOutputs.h"
#include "runtime/RunReports.h"
#include "runtime/RunStart.h"
#include "runtime/TensorStore.h"
#include "runtime/Trace.h"

namespace cleave::rt {

int runProgram(const Program &program, int argc, char **argv) {
  RunOptions options = startRun(program, argc, argv);
  GlobalTensors global(program);
  startDevice(program, global);
  checkOutputLocations(options, global);

  // --print-memory-peak measures from here: every tensor, the arena and
  // the data are allocated after.
  PeakMemoryMeter meter(options.printMemoryPeak);
  // Tensor by tensor, in table order: its memory, then its first value.
  TensorStore store(program, global);
  TrainingData data(global, options);
  for (int i = 0; i < program.numTensors; ++i) {
    store.allocateHostCopy(i);
    if (program.tensors[i].role == Role::Input)
      data.load(i);
    else
      store.setInitialValue(i, options);
  }
  data.chooseDataset();
  store.allocateStepMemory(/*report=*/!options.quiet);
  store.allocateWholeCopies();
  int64_t firstStep = restoreValues(options, store);
  requireRankAgreement(program, options, firstStep, data, store);

  RunReports reports(program, options, store, firstStep, data.batch());
  Checkpointer checkpointer(options, store);
  store.toDevice({Role::Param, Role::State});
  StepContext context{store.stepTensors(), store.arena(), 0, options.seed,
                      0.0f};
  reports.startSteps();
  for (int64_t step = firstStep; step < options.steps; ++step) {
    data.copyBatch(step, store);
    for (int i = 0; i < program.numTensors; ++i)
      if (program.tensors[i].role == Role::Step)
        *static_cast<int64_t *>(store.hostCopy(i)) = step;
    store.toDevice({Role::Input, Role::Step});
    context.step = step;
    detail::currentStep = step;
    CommCounters before = commCounters();
    traceStepBegin(step);
    program.step(context);
    traceStepEnd(step);
    reports.countCommunication(before);
    // Every rank reports the loss, which one stage computes (outside the
    // step's counted communication, which the compiler predicts).
    if (global.stage >= 0)
      broadcast(&context.loss, sizeof(context.loss), program.pipeline.lossStage,
                global.pipelineGroup());
    reports.afterStep(step, context.loss);
    checkpointer.afterStep(step, reports);
  }
  meter.stop();
  reports.finishSteps();
  writeFinalOutputs(program, options, store);
  reports.printSummaries(meter, data.heldBytes());
  if (program.device)
    program.device->stop();
  finalizeMesh();
  return 0;
}

} // namespace cleave::rt
