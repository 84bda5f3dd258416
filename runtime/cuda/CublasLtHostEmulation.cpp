//===- CublasLtHostEmulation.cpp - the cuBLASLt calls, on the host --------===//
//
// Part of the host emulation of the cuda target (see CudaHostEmulation.cpp):
// the cuBLASLt functions the runtime calls, with cuBLASLt's documented
// semantics, on host memory. cublasLtMatmul computes
// D = alpha * op(A) op(B) + beta * C, then the epilogue (the bias vector,
// one element per row of D, added to every column; then max(x, 0) for
// RELU_BIAS), column-major, on OpenBLAS; every operand's shape comes from the
// descriptors, as on a GPU, so a wrong layout or transpose in the runtime gives
// wrong numbers here too. The semi-opaque descriptors (fixed-size buffers in
// cublasLt.h) hold the emulation's own records of their attributes.
//
// What the runtime does not use (other types, orders, batches, epilogues,
// pointer modes, attributes) is refused with CUBLAS_STATUS_NOT_SUPPORTED
// and a line on stderr naming it, rather than computed approximately.
//
// Each distinct problem cublasLtMatmul runs (epilogue, transposes, sizes)
// is named once on stderr, so that a test can check which epilogue a
// program used; it changes nothing else.
//
//===----------------------------------------------------------------------===//

#include <cblas.h>
#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <tuple>

namespace {

/// A cublasLtMatmulDescOpaque_t's contents in the emulation.
struct MatmulDesc {
  cublasComputeType_t computeType;
  cudaDataType_t scaleType;
  int32_t pointerMode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N, transC = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  /// -1: the type of D (cuBLASLt's default).
  int32_t biasType = -1;
};

/// A cublasLtMatrixLayoutOpaque_t's contents in the emulation.
struct MatrixLayout {
  uint32_t type;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batchCount = 1;
  int64_t batchStride = 0;
};

/// A cublasLtMatmulPreferenceOpaque_t's contents in the emulation. The
/// emulated algorithm needs no workspace and no alignment, so these only
/// need to be well-formed.
struct Preference {
  uint32_t searchMode = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t maxWorkspaceBytes = 0;
  uint32_t minAlignment[4] = {256, 256, 256, 256};
};

static_assert(sizeof(MatmulDesc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(MatrixLayout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

/// The record stored in a descriptor's buffer by its Init.
template <typename T, typename Opaque> T &record(Opaque *opaque) {
  return *std::launder(reinterpret_cast<T *>(opaque->data));
}

/// The one algorithm the emulation offers, marked so that cublasLtMatmul
/// can tell it from an uninitialized cublasLtMatmulAlgo_t.
constexpr uint64_t kEmulatedAlgo = 0x436c656176654c74; // "CleaveLt"

cublasStatus_t unsupported(const char *what) {
  std::fprintf(stderr, "cuBLASLt host emulation: %s is not emulated\n", what);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t invalid(const char *what) {
  std::fprintf(stderr, "cuBLASLt host emulation: invalid value: %s\n", what);
  return CUBLAS_STATUS_INVALID_VALUE;
}

/// Copies an attribute's value from the caller's buffer, which cuBLASLt
/// requires to be exactly the attribute's size.
template <typename T>
cublasStatus_t setField(T &field, const void *buf, size_t sizeInBytes) {
  if (!buf || sizeInBytes != sizeof(T))
    return invalid("attribute buffer missing or of the wrong size");
  std::memcpy(&field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

/// The sizes of D = op(A) op(B): m x n, with inner dimension k.
struct Problem {
  int64_t m, n, k;
};

/// Checks a matmul against what the emulation computes and against
/// cuBLASLt's documented constraints, and derives its sizes.
cublasStatus_t checkProblem(const MatmulDesc &desc, const MatrixLayout &a,
                            const MatrixLayout &b, const MatrixLayout &c,
                            const MatrixLayout &d, Problem &problem) {
  if (desc.computeType != CUBLAS_COMPUTE_32F &&
      desc.computeType != CUBLAS_COMPUTE_32F_PEDANTIC)
    return unsupported("a compute type other than CUBLAS_COMPUTE_32F");
  if (desc.scaleType != CUDA_R_32F)
    return unsupported("a scale type other than CUDA_R_32F");
  if (desc.pointerMode != CUBLASLT_POINTER_MODE_HOST)
    return unsupported("a pointer mode other than CUBLASLT_POINTER_MODE_HOST");
  for (int32_t op : {desc.transA, desc.transB})
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return unsupported("a transpose other than CUBLAS_OP_N or CUBLAS_OP_T");
  if (desc.transC != CUBLAS_OP_N)
    return unsupported("CUBLASLT_MATMUL_DESC_TRANSC other than CUBLAS_OP_N");
  if (desc.epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
      desc.epilogue != CUBLASLT_EPILOGUE_BIAS &&
      desc.epilogue != CUBLASLT_EPILOGUE_RELU_BIAS)
    return unsupported("an epilogue other than DEFAULT, BIAS or RELU_BIAS");
  if (desc.biasType != -1 && desc.biasType != CUDA_R_32F)
    return unsupported("a bias type other than CUDA_R_32F");
  for (const MatrixLayout *layout : {&a, &b, &c, &d}) {
    if (layout->type != CUDA_R_32F)
      return unsupported("a matrix type other than CUDA_R_32F");
    if (layout->order != CUBLASLT_ORDER_COL)
      return unsupported("a matrix order other than CUBLASLT_ORDER_COL");
    if (layout->batchCount != 1)
      return unsupported("batched matmuls");
    if (layout->ld < std::max<int64_t>(1, layout->rows))
      return invalid("a leading dimension smaller than the rows");
  }
  bool transA = desc.transA == CUBLAS_OP_T, transB = desc.transB == CUBLAS_OP_T;
  problem.m = transA ? a.cols : a.rows;
  problem.k = transA ? a.rows : a.cols;
  int64_t kB = transB ? b.cols : b.rows;
  problem.n = transB ? b.rows : b.cols;
  if (kB != problem.k || static_cast<int64_t>(d.rows) != problem.m ||
      static_cast<int64_t>(d.cols) != problem.n || c.rows != d.rows ||
      c.cols != d.cols)
    return invalid("the sizes of A, B, C and D do not agree");
  return CUBLAS_STATUS_SUCCESS;
}

const char *epilogueName(uint32_t epilogue) {
  return epilogue == CUBLASLT_EPILOGUE_BIAS        ? "BIAS"
         : epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ? "RELU_BIAS"
                                                   : "DEFAULT";
}

/// One stderr line per distinct problem.
void trace(const MatmulDesc &desc, const Problem &problem) {
  static std::set<
      std::tuple<uint32_t, int32_t, int32_t, int64_t, int64_t, int64_t>>
      seen;
  if (!seen.emplace(desc.epilogue, desc.transA, desc.transB, problem.m,
                    problem.n, problem.k)
           .second)
    return;
  std::fprintf(
      stderr,
      "cublasLtMatmul (host emulation): epilogue %s, transa %c, "
      "transb %c, m %lld, n %lld, k %lld\n",
      epilogueName(desc.epilogue), desc.transA == CUBLAS_OP_T ? 'T' : 'N',
      desc.transB == CUBLAS_OP_T ? 'T' : 'N', static_cast<long long>(problem.m),
      static_cast<long long>(problem.n), static_cast<long long>(problem.k));
}

} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  static char emulated;
  *handle = reinterpret_cast<cublasLtHandle_t>(&emulated);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t) {
  return CUBLAS_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Descriptors: Init in place (the header's cublasLt*Init), or Create/Destroy
//===----------------------------------------------------------------------===//

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc,
                                               size_t size,
                                               cublasComputeType_t computeType,
                                               cudaDataType_t scaleType) {
  if (size < sizeof(MatmulDesc))
    return CUBLAS_STATUS_ALLOC_FAILED;
  MatmulDesc *desc = new (matmulDesc->data) MatmulDesc;
  desc->computeType = computeType;
  desc->scaleType = scaleType;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                                        cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  *matmulDesc = new cublasLtMatmulDescOpaque_t;
  return cublasLtMatmulDescInit(*matmulDesc, computeType, scaleType);
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

/// Each value's size must be that of its type in cublasLt.h (4 bytes for
/// the enums, 8 for the bias pointer).
cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes) {
  MatmulDesc &desc = record<MatmulDesc>(matmulDesc);
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    return setField(desc.computeType, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    return setField(desc.scaleType, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    return setField(desc.pointerMode, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return setField(desc.transA, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return setField(desc.transB, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_TRANSC:
    return setField(desc.transC, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return setField(desc.epilogue, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return setField(desc.bias, buf, sizeInBytes);
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    return setField(desc.biasType, buf, sizeInBytes);
  default:
    return unsupported("this cublasLtMatmulDescSetAttribute attribute");
  }
}

cublasStatus_t
cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size,
                                  cudaDataType type, uint64_t rows,
                                  uint64_t cols, int64_t ld) {
  if (size < sizeof(MatrixLayout))
    return CUBLAS_STATUS_ALLOC_FAILED;
  MatrixLayout *layout = new (matLayout->data) MatrixLayout;
  layout->type = type;
  layout->rows = rows;
  layout->cols = cols;
  layout->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *matLayout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  *matLayout = new cublasLtMatrixLayoutOpaque_t;
  return cublasLtMatrixLayoutInit(*matLayout, type, rows, cols, ld);
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                 cublasLtMatrixLayoutAttribute_t attr,
                                 const void *buf, size_t sizeInBytes) {
  MatrixLayout &layout = record<MatrixLayout>(matLayout);
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE:
    return setField(layout.type, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_ORDER:
    return setField(layout.order, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_ROWS:
    return setField(layout.rows, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_COLS:
    return setField(layout.cols, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_LD:
    return setField(layout.ld, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    return setField(layout.batchCount, buf, sizeInBytes);
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    return setField(layout.batchStride, buf, sizeInBytes);
  default:
    return unsupported("this cublasLtMatrixLayoutSetAttribute attribute");
  }
}

cublasStatus_t
cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                      size_t size) {
  if (size < sizeof(Preference))
    return CUBLAS_STATUS_ALLOC_FAILED;
  new (pref->data) Preference;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  return cublasLtMatmulPreferenceInit(*pref);
}
cublasStatus_t
cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                     cublasLtMatmulPreferenceAttributes_t attr,
                                     const void *buf, size_t sizeInBytes) {
  Preference &preference = record<Preference>(pref);
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
    return setField(preference.searchMode, buf, sizeInBytes);
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return setField(preference.maxWorkspaceBytes, buf, sizeInBytes);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return setField(
        preference
            .minAlignment[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES],
        buf, sizeInBytes);
  default:
    return unsupported("this cublasLtMatmulPreferenceSetAttribute attribute");
  }
}

//===----------------------------------------------------------------------===//
// The heuristic and the matmul
//===----------------------------------------------------------------------===//

/// One algorithm for every problem the emulation computes, needing no
/// workspace; none (CUBLAS_STATUS_NOT_SUPPORTED) for the others.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
    cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
    cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
    int *returnAlgoCount) {
  if (!lightHandle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount <= 0)
    return invalid("requestedAlgoCount <= 0");
  *returnAlgoCount = 0;
  if (record<Preference>(preference).searchMode != CUBLASLT_SEARCH_BEST_FIT)
    return unsupported("a search mode other than CUBLASLT_SEARCH_BEST_FIT");
  Problem problem;
  if (cublasStatus_t status = checkProblem(
          record<MatmulDesc>(operationDesc), record<MatrixLayout>(Adesc),
          record<MatrixLayout>(Bdesc), record<MatrixLayout>(Cdesc),
          record<MatrixLayout>(Ddesc), problem);
      status != CUBLAS_STATUS_SUCCESS)
    return status == CUBLAS_STATUS_INVALID_VALUE ? status
                                                 : CUBLAS_STATUS_NOT_SUPPORTED;
  cublasLtMatmulHeuristicResult_t &result = heuristicResultsArray[0];
  result = {};
  result.algo.data[0] = kEmulatedAlgo;
  result.workspaceSize = 0;
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceBytes, cudaStream_t) {
  if (!lightHandle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  // cuBLASLt wants its workspace 256-aligned; the runtime promises that.
  if (workspaceBytes && reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return invalid("a workspace not aligned to 256 bytes");
  const MatmulDesc &desc = record<MatmulDesc>(computeDesc);
  const MatrixLayout &a = record<MatrixLayout>(Adesc);
  const MatrixLayout &b = record<MatrixLayout>(Bdesc);
  const MatrixLayout &c = record<MatrixLayout>(Cdesc);
  const MatrixLayout &d = record<MatrixLayout>(Ddesc);
  Problem problem;
  if (cublasStatus_t status = checkProblem(desc, a, b, c, d, problem);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  // A null algo asks cuBLASLt to run its heuristic; a given one must be
  // the heuristic's.
  if (algo && algo->data[0] != kEmulatedAlgo)
    return invalid("an algorithm not returned by the heuristic");
  if (C == D && c.ld != d.ld)
    return invalid("in place (C == D) with different layouts of C and D");
  bool hasBias = desc.epilogue == CUBLASLT_EPILOGUE_BIAS ||
                 desc.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  if (hasBias && !desc.bias)
    return invalid("a bias epilogue without a bias pointer");
  trace(desc, problem);

  float alphaValue = *static_cast<const float *>(alpha);
  float betaValue = *static_cast<const float *>(beta);
  auto *out = static_cast<float *>(D);
  // D = beta * C first when C is another matrix (C is not read when beta
  // is 0); then sgemm accumulates into D.
  if (C != D && betaValue != 0.0f)
    for (int64_t j = 0; j < problem.n; ++j)
      std::memcpy(out + j * d.ld, static_cast<const float *>(C) + j * c.ld,
                  problem.m * sizeof(float));
  cblas_sgemm(CblasColMajor,
              desc.transA == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
              desc.transB == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, problem.m,
              problem.n, problem.k, alphaValue, static_cast<const float *>(A),
              a.ld, static_cast<const float *>(B), b.ld, betaValue, out, d.ld);
  // The bias epilogues: bias[i] added to row i of D, in every column, then
  // for RELU_BIAS max(x, 0).
  if (hasBias) {
    const auto *bias = static_cast<const float *>(desc.bias);
    bool relu = desc.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    for (int64_t j = 0; j < problem.n; ++j)
      for (int64_t i = 0; i < problem.m; ++i) {
        float &v = out[j * d.ld + i];
        v += bias[i];
        if (relu)
          v = std::max(v, 0.0f);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
