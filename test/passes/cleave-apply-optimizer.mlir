// RUN: cleave-opt %s --cleave-apply-optimizer="optimizer=sgd lr=0.5 momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: cleave-opt %s --cleave-apply-optimizer="optimizer=adamw lr=0.001 weight-decay=0.1 lr-schedule=cosine warmup-steps=2 total-steps=10 clip-grad-norm=1.0" | FileCheck %s --check-prefix=ADAMW

// SGD-LABEL: func.func @step(
// SGD-SAME: %[[W:[^:]+]]: tensor<3xf32> {cleave.param = "w"}
// SGD-SAME: %[[T:[^:]+]]: tensor<i64> {cleave.step}
// SGD-SAME: %[[BUF:[^:]+]]: tensor<3xf32> {cleave.init = "zeros", cleave.state = "w.momentum_buffer"}
// SGD-SAME: -> (tensor<f32> {cleave.loss}, tensor<3xf32> {cleave.update = "w"}, tensor<3xf32> {cleave.update = "w.momentum_buffer"})
// SGD: %[[U:.*]]:2 = cleave.sgd %[[W]], %{{.*}} momentum_buffer(%[[BUF]]) step(%[[T]]) {dampening = 0.000000e+00 : f32, lr = 5.000000e-01 : f32, momentum = 0.899999976 : f32, nesterov = false, weight_decay = 0.000000e+00 : f32}
// SGD: return %{{.*}}, %[[U]]#0, %[[U]]#1

// ADAMW-LABEL: func.func @step(
// ADAMW-SAME: {cleave.init = "zeros", cleave.state = "w.exp_avg"}
// ADAMW-SAME: {cleave.init = "zeros", cleave.state = "w.exp_avg_sq"}
// ADAMW: cleave.sqrt
// ADAMW: %[[F:.*]] = cleave.lr_schedule %{{.*}} {min_factor = 0.000000e+00 : f32, schedule = "cosine", total_steps = 10 : i64, warmup_steps = 2 : i64}
// ADAMW: cleave.adamw {{.*}} step(%{{.*}}) lr_factor(%[[F]]) {{{.*}}weight_decay = 1.000000e-01 : f32}
func.func @step(%w: tensor<3xf32> {cleave.param = "w"}, %g: tensor<3xf32>)
    -> (tensor<f32> {cleave.loss}, tensor<3xf32> {cleave.grad = "w"}) {
  %0 = cleave.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %0, %g : tensor<f32>, tensor<3xf32>
}
