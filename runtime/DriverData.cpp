//===- DriverData.cpp - the training data a program reads -----------------===//

#include "runtime/DriverData.h"
#include "runtime/GlobalTensors.h"
#include "runtime/TensorStore.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace cleave::rt {

namespace {

/// Refuses the first value of a loaded index input outside its range.
template <typename I>
void checkValues(const InputData &input, const IndexInputCheck &check) {
  const I *values = reinterpret_cast<const I *>(input.bytes());
  int64_t count = input.byteCount() / static_cast<int64_t>(sizeof(I));
  int64_t perSample = input.samples ? count / input.samples : count;
  for (int64_t i = 0; i < count; ++i) {
    int64_t value = values[i];
    if ((value >= check.low && value < check.high) ||
        (check.hasIgnore && value == check.ignore))
      continue;
    failRun("'" + input.path + "' sample " +
            std::to_string(perSample ? i / perSample : 0) + " holds " +
            std::to_string(value) + ", but graph input '" + input.spec->name +
            "' gives " + check.use + ", which must be in [" +
            std::to_string(check.low) + ", " + std::to_string(check.high) +
            ")" +
            (check.hasIgnore
                 ? " or the ignore_index " + std::to_string(check.ignore)
                 : std::string()));
  }
}

/// Rewrites `array` with its dim `dim` moved to the front, so that each
/// sample's values are contiguous: [d0, .., N, ..] -> [N, d0, ..].
void moveSamplesFirst(NpyArray &array, int dim, int64_t elementBytes) {
  int64_t outer = 1, inner = elementBytes, samples = array.shape[dim];
  for (int i = 0; i < dim; ++i)
    outer *= array.shape[i];
  for (size_t i = dim + 1; i < array.shape.size(); ++i)
    inner *= array.shape[i];
  std::vector<char> moved(array.data.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t n = 0; n < samples; ++n)
      std::memcpy(moved.data() + (n * outer + o) * inner,
                  array.data.data() + (o * samples + n) * inner, inner);
  array.data.swap(moved);
  array.shape.erase(array.shape.begin() + dim);
  array.shape.insert(array.shape.begin(), samples);
}

constexpr uint64_t kLcgMultiplier = 6364136223846793005ull;
constexpr uint64_t kLcgIncrement = 1442695040888963407ull;

/// The state of the generator x -> a x + c (Knuth's MMIX constants) `steps`
/// steps after `state`, by squaring the step: a rank starts the synthetic
/// sequence at its own first row.
uint64_t advanceLcg(uint64_t state, uint64_t steps) {
  uint64_t a = kLcgMultiplier, c = kLcgIncrement, totalA = 1, totalC = 0;
  for (; steps; steps >>= 1) {
    if (steps & 1) {
      totalA *= a;
      totalC = totalC * a + c;
    }
    c *= a + 1;
    a *= a;
  }
  return totalA * state + totalC;
}

/// The elements of one sample of `input`.
int64_t sampleElements(const InputData &input) {
  return input.sampleBytes / dtypeSize(input.spec->dtype);
}

} // namespace

int64_t firstNonFinite(const void *data, int64_t count, DType type) {
  auto scan = [&](auto *values) -> int64_t {
    for (int64_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i]))
        return i;
    return -1;
  };
  if (type == DType::F32)
    return scan(static_cast<const float *>(data));
  if (type == DType::F64)
    return scan(static_cast<const double *>(data));
  return -1;
}

void refuseNonFinite(const void *data, int64_t count, DType type,
                     const std::string &what, const RunOptions &options) {
  if (options.allowNonFinite)
    return;
  int64_t at = firstNonFinite(data, count, type);
  if (at < 0)
    return;
  double value = type == DType::F32 ? static_cast<const float *>(data)[at]
                                    : static_cast<const double *>(data)[at];
  failRun(what + " holds " + std::to_string(value) + " at element " +
          std::to_string(at) +
          "; training on it would only spread it (fix the value, or pass "
          "--allow-non-finite to train anyway)");
}

std::string shapeText(const int64_t *dims, int rank) {
  std::string text = "[";
  for (int i = 0; i < rank; ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

void fillSyntheticIndices(InputData &input, const IndexInputCheck &check) {
  int64_t range = check.high - check.low;
  if (range <= 0)
    return;
  int64_t count = static_cast<int64_t>(input.array.data.size()) /
                  dtypeSize(input.spec->dtype);
  uint64_t state = advanceLcg(7, input.firstSample * sampleElements(input));
  for (int64_t i = 0; i < count; ++i) {
    state = state * kLcgMultiplier + kLcgIncrement;
    int64_t value =
        check.low +
        static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(range));
    if (input.spec->dtype == DType::I64)
      reinterpret_cast<int64_t *>(input.array.data.data())[i] = value;
    else if (input.spec->dtype == DType::I32)
      reinterpret_cast<int32_t *>(input.array.data.data())[i] =
          static_cast<int32_t>(value);
  }
}

void checkIndexValues(const InputData &input, const IndexInputCheck &check) {
  if (input.spec->dtype == DType::I64)
    checkValues<int64_t>(input, check);
  else if (input.spec->dtype == DType::I32)
    checkValues<int32_t>(input, check);
}

InputData loadInput(const TensorSpec &spec, const RunOptions &options,
                    int64_t firstRow, int64_t rows) {
  InputData input{&spec, "", nullptr, {}, 0, 0};
  int64_t batch = spec.shape.rank ? spec.shape.dims[0] : 1;
  input.sampleBytes =
      batch ? spec.shape.numElements() / batch * dtypeSize(spec.dtype) : 0;
  if (options.synthetic) {
    // Random but valid: small floats, and zeros for integer inputs (valid
    // class labels and token ids for any model; spread over their range
    // where the program knows it, fillSyntheticIndices). Element i of the
    // batch is the generator's (i+1)-th number, whichever rank makes it.
    input.samples = batch;
    input.firstSample = firstRow;
    if (rows < 0)
      rows = batch;
    input.array.data.assign(rows * input.sampleBytes, 0);
    if (spec.dtype == DType::F32) {
      float *f = reinterpret_cast<float *>(input.array.data.data());
      int64_t perSample = sampleElements(input);
      uint64_t state = advanceLcg(42, firstRow * perSample);
      for (int64_t i = 0; i < rows * perSample; ++i) {
        state = state * kLcgMultiplier + kLcgIncrement;
        f[i] = static_cast<float>((state >> 40) * 0x1.0p-24) - 0.5f;
      }
    }
    return input;
  }
  input.path = options.data + "/" + spec.file;
  const std::string &path = input.path;
  std::string error;
  auto mapped = std::make_shared<MappedNpy>();
  if (!mapNpy(path, *mapped, error))
    failRun(error + " (graph input '" + spec.name + "' is " +
            dtypeName(spec.dtype) + " " +
            shapeText(spec.shape.dims, spec.shape.rank) + ")");
  if (mapped->kind != dtypeNpyKind(spec.dtype))
    failRun("'" + path + "' holds numpy dtype '" + mapped->kind +
            "' but graph input '" + spec.name + "' is " +
            dtypeName(spec.dtype) + "; save it with .astype(numpy." +
            dtypeName(spec.dtype) + ")");
  input.mapped = mapped;
  const std::vector<int64_t> shape = mapped->shape;
  if (spec.shape.rank == 0) {
    // A 0-d input has no samples: the file holds the value itself.
    if (!shape.empty())
      failRun("'" + path + "' has shape " +
              shapeText(shape.data(), shape.size()) + " but graph input '" +
              spec.name + "' is 0-d");
    input.samples = 1;
    return input;
  }
  // The file is in the model's layout: the samples along spec.batchDim,
  // the other dims those of a sample in order.
  int batchDim = spec.batchDim;
  std::string wanted = "[";
  bool sampleShapeMatches = static_cast<int>(shape.size()) == spec.shape.rank;
  for (int i = 0, rest = 1; i < spec.shape.rank; ++i) {
    wanted += i ? ", " : "";
    if (i == batchDim) {
      wanted += "N";
      continue;
    }
    wanted += std::to_string(spec.shape.dims[rest]);
    sampleShapeMatches =
        sampleShapeMatches && shape[i] == spec.shape.dims[rest];
    ++rest;
  }
  if (!sampleShapeMatches)
    failRun("'" + path + "' has shape " +
            shapeText(shape.data(), shape.size()) + " but graph input '" +
            spec.name + "' needs " + wanted + "] (N samples along dim " +
            std::to_string(batchDim) + ")");
  input.samples = shape[batchDim];
  // numpy aligns an array's data to 64 bytes in the file; a file that
  // does not (or whose samples must move first) is copied.
  bool aligned = reinterpret_cast<std::uintptr_t>(mapped->data()) %
                     dtypeSize(spec.dtype) ==
                 0;
  if (batchDim != 0 || !aligned) {
    input.array.kind = mapped->kind;
    input.array.shape = mapped->shape;
    input.array.data.assign(mapped->data(), mapped->data() + mapped->size());
    input.mapped.reset();
  }
  if (batchDim != 0)
    moveSamplesFirst(input.array, batchDim, dtypeSize(spec.dtype));
  if (input.samples < batch)
    failRun("'" + path + "' holds " + std::to_string(input.samples) +
            " samples, fewer than one batch of " + std::to_string(batch));
  int64_t count = input.byteCount() / dtypeSize(spec.dtype);
  if (int64_t at = firstNonFinite(input.bytes(), count, spec.dtype);
      at >= 0 && !options.allowNonFinite)
    refuseNonFinite(input.bytes(), count, spec.dtype,
                    "'" + path + "' (sample " +
                        std::to_string(at / (count / input.samples)) + ")",
                    options);
  return input;
}

void TrainingData::load(int i) {
  const Program &program = global.program;
  // With --synthetic a rank makes the rows it copies: its block's, the
  // whole batch where another dimension is split, none on a stage that
  // does not read the input.
  int64_t first = 0, rows = -1;
  if (options.synthetic) {
    int64_t firstRow = global.firstLocalRow(i);
    if (!global.holds(i)) {
      rows = 0;
    } else if (firstRow >= 0) {
      first = firstRow;
      rows = global.localRows(i);
    }
  }
  loaded.push_back(loadInput(global.specs[i], options, first, rows));
  for (int c = 0; c < program.numIndexChecks; ++c) {
    const IndexInputCheck &check = program.indexChecks[c];
    if (check.tensor != i)
      continue;
    if (options.synthetic)
      fillSyntheticIndices(loaded.back(), check);
    else
      checkIndexValues(loaded.back(), check);
  }
  batchRows = global.specs[i].shape.rank ? global.specs[i].shape.dims[0] : 1;
}

void TrainingData::chooseDataset() {
  const InputData *dataset = nullptr;
  for (const InputData &input : loaded) {
    int64_t rows = input.spec->shape.rank ? input.spec->shape.dims[0] : 1;
    if (input.samples == rows)
      continue;
    if (dataset && input.samples != dataset->samples)
      failRun(std::string("inputs '") + dataset->spec->name + "' and '" +
              input.spec->name + "' hold different numbers of samples (" +
              std::to_string(dataset->samples) + " and " +
              std::to_string(input.samples) + ")");
    dataset = &input;
  }
  order.emplace(dataset ? dataset->samples : 1, options);
  // One whole batch for every input split along another dimension than
  // the batch's, allocated once (the planner predicts its size).
  int64_t largest = 0;
  for (const InputData &input : loaded) {
    int index = input.spec - global.specs.data();
    if (global.holds(index) && global.firstLocalRow(index) < 0)
      largest = std::max(largest, global.wholeBytes(index));
  }
  wholeBatch.resize(largest);
}

void TrainingData::copyBatch(int64_t step, TensorStore &store) {
  for (InputData &input : loaded) {
    int index = input.spec - global.specs.data();
    if (!global.holds(index))
      continue;
    // A block of whole rows (a batch split over data-parallel ranks, or
    // not split) is copied sample by sample where the step reads it; a
    // block split along another dimension is cut out of the whole batch.
    char *dest = static_cast<char *>(store.hostCopy(index));
    int64_t rows = input.spec->shape.rank ? input.spec->shape.dims[0] : 1;
    int64_t first = global.firstLocalRow(index), count = rows;
    bool cut = first < 0;
    if (cut) {
      dest = wholeBatch.data();
      first = 0;
    } else {
      count = global.localRows(index);
    }
    for (int64_t j = 0; j < count; ++j) {
      int64_t row = first + j;
      int64_t sample =
          input.samples == rows ? row : order->sample(step * rows + row);
      std::memcpy(dest + j * input.sampleBytes,
                  input.bytes() +
                      (sample - input.firstSample) * input.sampleBytes,
                  input.sampleBytes);
    }
    if (cut)
      global.toLocal(index, wholeBatch.data(), store.hostCopy(index));
  }
}

int64_t TrainingData::heldBytes() const {
  // Mapped files are the page cache's, not the rank's.
  int64_t bytes = static_cast<int64_t>(wholeBatch.capacity());
  for (const InputData &input : loaded)
    bytes += static_cast<int64_t>(input.array.data.capacity());
  return bytes;
}

} // namespace cleave::rt
