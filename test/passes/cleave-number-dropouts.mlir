// RUN: cleave-opt %s --cleave-number-dropouts | FileCheck %s

// Dropouts are numbered in program order: the emitted program's random
// stream for each, whatever copies or orders later passes make.
// CHECK-LABEL: func.func @dropouts
// CHECK: cleave.dropout %arg0 {cleave.dropout_number = 0 : i64
// CHECK: cleave.dropout %{{.*}} {cleave.dropout_number = 1 : i64
module {
  func.func @dropouts(%x: tensor<8x4xf32> {cleave.input = "x"}) -> (tensor<8x4xf32> {cleave.loss}) {
    %y, %m = cleave.dropout %x {ratio = 0.5 : f32, training = true}
        : tensor<8x4xf32> -> (tensor<8x4xf32>, tensor<8x4xi1>)
    %z, %n = cleave.dropout %y {ratio = 0.5 : f32, training = true}
        : tensor<8x4xf32> -> (tensor<8x4xf32>, tensor<8x4xi1>)
    return %z : tensor<8x4xf32>
  }
}
