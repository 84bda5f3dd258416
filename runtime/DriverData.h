//===- DriverData.h - the training data a program reads ---------*- C++ -*-===//
//
// Part of the Cleave runtime: plain C++ (no MLIR). Loads each graph
// input's samples (--data DIR/<input>.npy, or --synthetic), checks labels
// and indices as they load, orders the samples of each step and copies
// each step's batch where the step reads it.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_DRIVERDATA_H
#define CLEAVE_RUNTIME_DRIVERDATA_H

#include "runtime/DriverOptions.h"
#include "runtime/Npy.h"
#include "runtime/Program.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cleave::rt {

struct GlobalTensors; // runtime/GlobalTensors.h
class TensorStore;    // runtime/TensorStore.h

/// One graph input's samples, loaded from --data or random.
struct InputData {
  const TensorSpec *spec;
  /// The .npy file (empty with --synthetic).
  std::string path;
  /// The file's data mapped, not copied (--data): every rank on a machine
  /// reads the same pages of the page cache, which are not the rank's own
  /// memory. Null where `array` holds the samples.
  std::shared_ptr<const MappedNpy> mapped;
  /// The samples the rank made (--synthetic), or copied from a file whose
  /// samples are not along its first dim (moved there) or whose data is
  /// not aligned to its elements.
  NpyArray array;
  int64_t samples = 0;
  int64_t sampleBytes = 0;
  /// The first sample held: with --synthetic a rank makes only the rows of
  /// the batch it reads (samples [firstSample, firstSample + rows)), the
  /// same values whichever rank makes them.
  int64_t firstSample = 0;

  /// The samples' bytes, and how many.
  const char *bytes() const {
    return mapped ? mapped->data() : array.data.data();
  }
  int64_t byteCount() const {
    return static_cast<int64_t>(mapped ? mapped->size() : array.data.size());
  }
  /// The samples' shape as held (samples first, but for a 0-d input).
  const std::vector<int64_t> &shape() const {
    return mapped ? mapped->shape : array.shape;
  }
};

/// Loads graph input `spec` (its global shape) as the options say; exits
/// with a message naming the file on a bad or mismatched file. With
/// --synthetic, makes only the `rows` rows of one batch from `firstRow`
/// (all of them where `rows` is negative).
InputData loadInput(const TensorSpec &spec, const RunOptions &options,
                    int64_t firstRow = 0, int64_t rows = -1);

/// Exits naming the file and sample at the first value of an integer input
/// outside the range `check` gives.
void checkIndexValues(const InputData &input, const IndexInputCheck &check);
/// --synthetic: spreads `input`'s values over the range `check` allows (a
/// fixed pseudo-random sequence over the batch's elements, of which
/// `input` holds its rows'), so that token ids and labels are not all one
/// value (a padding id masking every position, say).
void fillSyntheticIndices(InputData &input, const IndexInputCheck &check);

/// The first element of `data` (`count` elements of `type`) that is NaN
/// or infinite, or -1; integer types have none.
int64_t firstNonFinite(const void *data, int64_t count, DType type);

/// Exits naming `what` (a tensor or a file) and the element when `data`
/// holds NaN or infinity, unless the options allow it.
void refuseNonFinite(const void *data, int64_t count, DType type,
                     const std::string &what, const RunOptions &options);

/// `[d0, d1, ...]`.
std::string shapeText(const int64_t *dims, int rank);

/// The sample of batch row `row` at `step`: in order, or through a seeded
/// permutation that is redrawn every pass over the data (so a resumed run
/// sees the same order as an uninterrupted one).
class SampleOrder {
public:
  SampleOrder(int64_t samples, const RunOptions &options)
      : samples(samples), shuffle(options.shuffle), seed(options.shuffleSeed) {}

  int64_t sample(int64_t position) {
    int64_t pass = position / samples, offset = position % samples;
    if (!shuffle)
      return offset;
    if (pass != currentPass) {
      permutation.resize(samples);
      for (int64_t i = 0; i < samples; ++i)
        permutation[i] = i;
      uint64_t state = seed * 0x9E3779B97F4A7C15ull + pass;
      for (int64_t i = samples - 1; i > 0; --i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(permutation[i], permutation[(state >> 33) % (i + 1)]);
      }
      currentPass = pass;
    }
    return permutation[offset];
  }

private:
  int64_t samples;
  bool shuffle;
  uint64_t seed;
  int64_t currentPass = -1;
  std::vector<int64_t> permutation;
};

/// The graph inputs of a program and the batch each step reads from them.
class TrainingData {
public:
  TrainingData(const GlobalTensors &global, const RunOptions &options)
      : global(global), options(options) {}

  /// Loads graph input `i`, checking its index values (or, with
  /// --synthetic, spreading them over their range).
  void load(int i);
  /// Inputs whose file holds exactly one batch are the same every step (a
  /// weight fed as an input, say); the others are the data set and must
  /// agree on its size. Called once every input is loaded.
  void chooseDataset();
  /// Copies the batch of `step` of every input this rank reads into its
  /// host copy in `store`: the rows of its block, or, for an input split
  /// along another dimension than the batch's, the whole batch, of which
  /// it keeps its block.
  void copyBatch(int64_t step, TensorStore &store);
  /// The bytes this rank holds for the data: every input's samples as
  /// loaded (its rows of one batch with --synthetic; with --data the
  /// files it had to copy, not those it maps) and the whole batch of an
  /// input split along another dimension than the batch's.
  int64_t heldBytes() const;

  const std::vector<InputData> &inputs() const { return loaded; }
  /// The rows of a batch (the first dimension of the last input).
  int64_t batch() const { return batchRows; }

private:
  const GlobalTensors &global;
  const RunOptions &options;
  std::vector<InputData> loaded;
  int64_t batchRows = 0;
  std::optional<SampleOrder> order;
  /// The whole batch of an input split along another dimension than the
  /// batch's, before this rank takes its block.
  std::vector<char> wholeBatch;
};

} // namespace cleave::rt

#endif // CLEAVE_RUNTIME_DRIVERDATA_H
