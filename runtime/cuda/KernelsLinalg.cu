//===- KernelsLinalg.cu - gemm and matmul on cuBLAS -----------------------===//
//
// Part of the Cleave runtime's cuda backend. cuBLAS is column-major and our
// buffers row-major; a row-major [M, N] matrix is the column-major [N, M]
// matrix of its transpose, so C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T: the operands swap places and keep
// their transpose flags and leading dimensions. The 64-bit cuBLAS API takes
// the sizes as they are. alpha and beta are host values (the handle's
// default pointer mode).
//
// gemmBias is the same mapping on cuBLASLt, whose bias epilogue adds a
// vector along the rows of the column-major D: D is our C^T, [N, M], so its
// rows are our N columns, and the bias is broadcast over our M rows as a
// Gemm's [N] bias row is. Its RELU_BIAS form then applies max(x, 0): the
// training graph's ReLU gradient reads the ReLU's output (Autodiff.cpp), so
// the pre-activation need not be kept (no RELU_AUX_BIAS mask).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/KernelScratch.h"
#include "runtime/cuda/Launch.cuh"

#include "runtime/BroadcastBodies.h"
#include "runtime/DataMovementBodies.h"
#include "runtime/ElementwiseBodies.h"
#include "runtime/MatmulGeometry.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace cleave::rt::cuda {

namespace {

/// The alignment of `pointer`, as cuBLASLt's heuristic wants to know it: the
/// largest power of two dividing the address, from 4 (a float) to the 256
/// bytes of a cudaMalloc (tensors in the scratch arena are only 64-byte
/// aligned).
uint32_t alignmentOf(const void *pointer) {
  auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 4 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

/// One bias GEMM problem planned for cuBLASLt: its descriptors, initialized
/// in place (so nothing to destroy), and the algorithm the heuristic chose.
/// Planned once per epilogue, shape, transposes and operand alignments, so
/// that the heuristic's search (host work) is not repeated every step; the
/// bias pointer is the only attribute set per call.
struct BiasGemmPlan {
  cublasLtMatmulDescOpaque_t operation;
  cublasLtMatrixLayoutOpaque_t aLayout, bLayout, dLayout;
  cublasLtMatmulAlgo_t algo;
  size_t workspaceBytes = 0;
};

/// The plan of c = alpha * op(a) op(b) + bias (gemmBias's arguments), made
/// on first use. In cuBLASLt's column-major terms its A is our b, its B our
/// a, and its D (= C, not read as beta is 0) our c as [n, m].
BiasGemmPlan &biasGemmPlan(bool transA, bool transB, int64_t m, int64_t n,
                           int64_t k, const float *a, const float *b,
                           const float *bias, const float *c,
                           GemmEpilogue epilogueKind) {
  // Plans live as long as the process; a std::map's nodes never move, so
  // the descriptors stay where they were initialized.
  using Key = std::tuple<GemmEpilogue, bool, bool, int64_t, int64_t, int64_t,
                         uint32_t, uint32_t, uint32_t, uint32_t>;
  static std::map<Key, BiasGemmPlan> plans;
  auto [it, inserted] = plans.try_emplace(
      Key(epilogueKind, transA, transB, m, n, k, alignmentOf(a), alignmentOf(b),
          alignmentOf(c), alignmentOf(bias)));
  BiasGemmPlan &plan = it->second;
  if (!inserted)
    return plan;

  cublasLtMatmulDesc_t operation = &plan.operation;
  // FP32 operands, accumulation and scaling; CUBLAS_COMPUTE_32F is plain
  // FP32 arithmetic (TF32 tensor cores would be CUBLAS_COMPUTE_32F_FAST_TF32),
  // as the unfused gemm and the cpu target compute.
  CLEAVE_CUBLAS_CHECK(
      cublasLtMatmulDescInit(operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = epilogueKind == GemmEpilogue::BiasRelu
                                    ? CUBLASLT_EPILOGUE_RELU_BIAS
                                    : CUBLASLT_EPILOGUE_BIAS;
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      operation, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      operation, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  // The heuristic reads the bias pointer's alignment from the descriptor.
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));

  // Layouts as stored (before op), column-major: our row-major [r, c] is
  // the column-major [c, r] with leading dimension c.
  CLEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&plan.aLayout, CUDA_R_32F,
                                               transB ? k : n, transB ? n : k,
                                               transB ? k : n));
  CLEAVE_CUBLAS_CHECK(cublasLtMatrixLayoutInit(&plan.bLayout, CUDA_R_32F,
                                               transA ? m : k, transA ? k : m,
                                               transA ? m : k));
  CLEAVE_CUBLAS_CHECK(
      cublasLtMatrixLayoutInit(&plan.dLayout, CUDA_R_32F, n, m, n));

  cublasLtMatmulPreferenceOpaque_t preference;
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulPreferenceInit(&preference));
  uint64_t maxWorkspace = scratch::kGemmEpilogueBytes;
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      &preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
      sizeof maxWorkspace));
  // cuBLASLt assumes 256-byte aligned matrices unless told otherwise.
  uint32_t alignA = alignmentOf(b), alignB = alignmentOf(a),
           alignD = alignmentOf(c);
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t *>
      alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignD},
                      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD}};
  for (auto [attribute, alignment] : alignments)
    CLEAVE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        &preference, attribute, alignment, sizeof *alignment));

  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      cublasLtHandle(), operation, &plan.aLayout, &plan.bLayout, &plan.dLayout,
      &plan.dLayout, &preference, 1, &result, &found);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 ||
      result.state != CUBLAS_STATUS_SUCCESS) {
    char message[256];
    std::snprintf(message, sizeof message,
                  "no cuBLASLt algorithm for the FP32 GEMM with a bias "
                  "epilogue [%lld x %lld] x [%lld x %lld] (%s)",
                  static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(k), static_cast<long long>(n),
                  cublasGetStatusString(
                      status != CUBLAS_STATUS_SUCCESS ? status : result.state));
    cudaFailure("cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__, message);
  }
  plan.algo = result.algo;
  plan.workspaceBytes = result.workspaceSize;
  return plan;
}

} // namespace

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          float alpha, const float *a, const float *b, float beta, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // cuBLAS rejects a leading dimension of 0; the product is empty anyway
    // and C = beta * C, with C unread when beta == 0 (as the cpu gemm).
    if (beta == 0.0f)
      launch(m * n, body::FillZero<float>{c});
    else if (beta != 1.0f)
      CLEAVE_CUBLAS_CHECK(cublasSscal_64(cublasHandle(), m * n, &beta, c, 1));
    return;
  }
  int64_t lda = transA ? m : k;
  int64_t ldb = transB ? k : n;
  CLEAVE_CUBLAS_CHECK(cublasSgemm_64(cublasHandle(),
                                     transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     transA ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                                     k, &alpha, b, ldb, a, lda, &beta, c, n));
}

void gemmBias(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              float alpha, const float *a, const float *b, const float *bias,
              float *c, GemmEpilogue epilogue) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    // No GEMM for cuBLASLt (as gemm() keeps k == 0 from cuBLAS): the
    // product is 0, the result the bias (ReLU'd).
    broadcastTo(bias, Shape{n}, c, Shape{m, n});
    if (epilogue == GemmEpilogue::BiasRelu)
      launch(m * n,
             body::MapUnaryItems<body::Relu, float, float>{c, c, body::Relu{}});
    return;
  }
  BiasGemmPlan &plan =
      biasGemmPlan(transA, transB, m, n, k, a, b, bias, c, epilogue);
  CLEAVE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      &plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  DeviceScratch workspace(static_cast<int64_t>(plan.workspaceBytes));
  float beta = 0.0f;
  CLEAVE_CUBLAS_CHECK(cublasLtMatmul(
      cublasLtHandle(), &plan.operation, &alpha, b, &plan.aLayout, a,
      &plan.bLayout, &beta, c, &plan.dLayout, c, &plan.dLayout, &plan.algo,
      workspace.as<void>(), plan.workspaceBytes, computeStream()));
}

void matmul(const float *a, const Shape &aShape, const float *b,
            const Shape &bShape, float *out, const Shape &outShape) {
  MatmulGeometry g(aShape, bShape);
  int64_t m = g.m, k = g.k, n = g.n, batchCount = g.batchCount;
  if (g.empty())
    return;
  if (g.isTallProduct()) {
    gemm(false, false, batchCount * m, n, k, 1.0f, a, b, 0.0f, out);
    return;
  }
  int64_t aCount = g.aBatch.numElements(), bCount = g.bBatch.numElements();
  if (k == 0) {
    launch(batchCount * m * n, body::FillZero<float>{out});
    return;
  }

  // Each operand either has every batch (its dims equal the broadcast ones,
  // since a broadcast dim of size 1 would shrink its count) or one matrix
  // for all: one strided-batched call, stride 0 for the shared operand.
  bool aUniform = aCount == batchCount || aCount == 1;
  bool bUniform = bCount == batchCount || bCount == 1;
  if (aUniform && bUniform) {
    float alpha = 1.0f, beta = 0.0f;
    long long strideA = aCount == 1 ? 0 : m * k;
    long long strideB = bCount == 1 ? 0 : k * n;
    CLEAVE_CUBLAS_CHECK(cublasSgemmStridedBatched_64(
        cublasHandle(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n,
        strideB, a, k, strideA, &beta, out, n, m * n, batchCount));
    return;
  }

  // Broadcast over some batch dims only ([2, 1] against [1, 3]): one gemm
  // per batch, at the broadcast operands' offsets (StridedIndex walks the
  // batch dims with stride 0 where an operand is broadcast).
  body::StridedIndex aIndex = body::StridedIndex::broadcast(g.aBatch, g.batch);
  body::StridedIndex bIndex = body::StridedIndex::broadcast(g.bBatch, g.batch);
  for (int64_t bi = 0; bi < batchCount; ++bi)
    gemm(false, false, m, n, k, 1.0f, a + aIndex(bi) * m * k,
         b + bIndex(bi) * k * n, 0.0f, out + bi * m * n);
}

} // namespace cleave::rt::cuda
