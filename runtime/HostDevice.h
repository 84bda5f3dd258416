//===- HostDevice.h - code both targets compile -----------------*- C++ -*-===//
//
// Part of the Cleave runtime. CLEAVE_HD marks a function that the cpu target
// calls from its loops and the cuda target from its kernels: the same math,
// compiled twice. Such functions call nothing device code cannot call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_HOSTDEVICE_H
#define CLEAVE_RUNTIME_HOSTDEVICE_H

#if defined(__CUDACC__)
#define CLEAVE_HD __host__ __device__
#else
#define CLEAVE_HD
#endif

#endif // CLEAVE_RUNTIME_HOSTDEVICE_H
