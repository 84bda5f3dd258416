// RUN: cleave-opt %s | cleave-opt | FileCheck %s
// RUN: cleave-opt %s --mlir-print-op-generic | cleave-opt | FileCheck %s

// Round trip of the sums of a BatchNorm over a batch split over ranks
// (CleaveBatchStatisticsOps.td) through their custom and generic forms.

// CHECK-LABEL: func.func @split_batch_norm
// CHECK: %[[S:.*]] = cleave.batch_norm_sum %arg0 {divisor = 512 : i64} : tensor<4x16x4x4xf32> -> tensor<16xf32>
// CHECK: %[[D:.*]] = cleave.batch_norm_squared_deviation_sum %arg0, %[[S]] {divisor = 512 : i64} : (tensor<4x16x4x4xf32>, tensor<16xf32>) -> tensor<16xf32>
// CHECK: %[[GS:.*]], %[[GC:.*]] = cleave.batch_norm_grad_sums %arg1, %arg0, %[[S]] : (tensor<4x16x4x4xf32>, tensor<4x16x4x4xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
// CHECK: cleave.batch_norm_grad_from_sums %arg1, %arg0, %arg2, %[[S]], %[[D]], %[[GS]], %[[GC]] {count = 512 : i64, epsilon = 9.99999974E-6 : f32}
// CHECK-SAME: -> (tensor<4x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
func.func @split_batch_norm(%x: tensor<4x16x4x4xf32>, %dy: tensor<4x16x4x4xf32>, %scale: tensor<16xf32>) {
  %mean = cleave.batch_norm_sum %x {divisor = 512 : i64} : tensor<4x16x4x4xf32> -> tensor<16xf32>
  %var = cleave.batch_norm_squared_deviation_sum %x, %mean {divisor = 512 : i64}
      : (tensor<4x16x4x4xf32>, tensor<16xf32>) -> tensor<16xf32>
  %sdy, %sdyc = cleave.batch_norm_grad_sums %dy, %x, %mean
      : (tensor<4x16x4x4xf32>, tensor<4x16x4x4xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  %dx, %ds, %db = cleave.batch_norm_grad_from_sums %dy, %x, %scale, %mean, %var, %sdy, %sdyc
      {count = 512 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x16x4x4xf32>, tensor<4x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<4x16x4x4xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}
