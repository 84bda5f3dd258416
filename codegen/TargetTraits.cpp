//===- TargetTraits.cpp - what differs between the targets' programs ------===//

#include "codegen/TargetTraits.h"

namespace mlir::cleave::codegen {

static const TargetTraits kCpu = {
    /*name=*/"cpu",
    /*runtimeIncludes=*/
    "#include \"runtime/CollectiveKernels.h\"\n"
    "#include \"runtime/Collectives.h\"\n"
    "#include \"runtime/CommVolume.h\"\n"
    "#include \"runtime/Elementwise.h\"\n"
    "#include \"runtime/Kernels.h\"\n"
    "#include \"runtime/Trace.h\"\n",
    /*runtimeNamespaces=*/"",
    /*copyFunction=*/"std::copy_n",
    /*fillFunction=*/"std::fill_n",
    /*readScalar=*/"{0}[0]",
    /*writeScalar=*/"{0}[0] = {1}",
    /*deviceMemory=*/false,
    /*allReduceBytesSent=*/"allReduceBytesSent",
    /*segmentedBuckets=*/true,
    /*stridedMatmuls=*/true,
    /*fusedBackwardSgd=*/true,
    /*asyncHandOvers=*/true,
    /*blockingAllReduceAtOnce=*/true,
    /*gemmBiasEpilogue=*/false,
};

static const TargetTraits kCuda = {
    /*name=*/"cuda",
    /*runtimeIncludes=*/
    "#include \"runtime/cuda/CudaCollectives.h\"\n"
    "#include \"runtime/cuda/CudaElementwise.cuh\"\n"
    "#include \"runtime/cuda/CudaKernels.h\"\n"
    "#include \"runtime/cuda/CudaSupport.h\"\n"
    "#include \"runtime/CommVolume.h\"\n"
    "#include \"runtime/Trace.h\"\n",
    /*runtimeNamespaces=*/"using namespace cleave::rt::cuda;\n",
    /*copyFunction=*/"copyN",
    /*fillFunction=*/"fillN",
    /*readScalar=*/"readScalar({0})",
    /*writeScalar=*/"writeScalar({0}, {1})",
    /*deviceMemory=*/true,
    /*allReduceBytesSent=*/"ringAllReduceBytesSent",
    /*segmentedBuckets=*/false,
    /*stridedMatmuls=*/false,
    /*fusedBackwardSgd=*/false,
    /*asyncHandOvers=*/false,
    /*blockingAllReduceAtOnce=*/false,
    /*gemmBiasEpilogue=*/true,
};

const TargetTraits &TargetTraits::of(Target target) {
  return target == Target::Cuda ? kCuda : kCpu;
}

} // namespace mlir::cleave::codegen
