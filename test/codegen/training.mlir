// RUN: cleave-translate --cleave-to-cpp --split-input-file %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda --split-input-file %s | FileCheck %s --check-prefix=CUDA

// Training ops are runtime calls (runtime/KernelsTraining.cpp). Random ops
// draw from the step and a seed (their own, else --seed), so that every
// step and every dropout differ; updates write the parameter and its state
// in place. The learning-rate factor is a 0-d tensor that the update's
// learning rate multiplies; on the GPU it is written with writeScalar.

// CPU-LABEL: static void stepPart(
// CPU: [[F:schedule]][0] = lrScheduleFactor(Schedule::Cosine, 2, 10, 0.000000000e+00f, ctx.step);  // schedule
// CPU: dropout(x, 32, 2.500000000e-01f, ctx.seed, 0, ctx.step, nullptr, 32, 32, drop_0, drop_1);  // drop
// CPU: randomNormal(noise, 32, 0.000000000e+00f, 1.999999955e-02f, 7ull, 0, ctx.step);  // noise
// CPU: sgdUpdate(w, dw, w_momentum_buffer, 8, 5.000000075e-02f, 8.999999762e-01f, 0.000000000e+00f, true, 0.000000000e+00f, ctx.step);  // w.sgd
// CPU: adamwUpdate(u, du, u_exp_avg, u_exp_avg_sq, 8, 9.999999776e-03f * [[F]][0], 8.999999762e-01f, 9.990000129e-01f, 9.999999939e-09f, 9.999999776e-03f, ctx.step);  // u.adamw
// CPU: static void trainStep(StepContext &ctx) {
// CPU-NOT: std::copy_n({{.*}} // update

// CUDA-LABEL: static void stepPart(
// CUDA: writeScalar(schedule, lrScheduleFactor(Schedule::Cosine, 2, 10, 0.000000000e+00f, ctx.step));  // schedule
// CUDA: sgdUpdate(w, dw, w_momentum_buffer, 8, 5.000000075e-02f, 8.999999762e-01f, 0.000000000e+00f, true, 0.000000000e+00f, ctx.step);  // w.sgd
// The factor lives in device memory: the host reads it through readScalar.
// CUDA: adamwUpdate(u, du, u_exp_avg, u_exp_avg_sq, 8, 9.999999776e-03f * readScalar(schedule), 8.999999762e-01f, 9.990000129e-01f, 9.999999939e-09f, 9.999999776e-03f, ctx.step);  // u.adamw
module {
  func.func @step(%x: tensor<4x8xf32> {cleave.input = "x"},
                  %w: tensor<8xf32> {cleave.param = "w"},
                  %dw: tensor<8xf32> {cleave.input = "dw"},
                  %u: tensor<8xf32> {cleave.param = "u"},
                  %du: tensor<8xf32> {cleave.input = "du"},
                  %t: tensor<i64> {cleave.step},
                  %buf: tensor<8xf32> {cleave.init = "zeros", cleave.state = "w.momentum_buffer"},
                  %m: tensor<8xf32> {cleave.init = "zeros", cleave.state = "u.exp_avg"},
                  %v: tensor<8xf32> {cleave.init = "zeros", cleave.state = "u.exp_avg_sq"})
      -> (tensor<4x8xf32> {cleave.output = "drop"},
          tensor<4x8xf32> {cleave.output = "noise"},
          tensor<8xf32> {cleave.update = "w"},
          tensor<8xf32> {cleave.update = "w.momentum_buffer"},
          tensor<8xf32> {cleave.update = "u"},
          tensor<8xf32> {cleave.update = "u.exp_avg"},
          tensor<8xf32> {cleave.update = "u.exp_avg_sq"}) {
    %f = cleave.lr_schedule %t {min_factor = 0.000000e+00 : f32, schedule = "cosine", total_steps = 10 : i64, warmup_steps = 2 : i64} : tensor<i64> -> tensor<f32> loc("schedule")
    %out, %mask = cleave.dropout %x {cleave.dropout_number = 0 : i64, ratio = 2.500000e-01 : f32, training = true} : tensor<4x8xf32> -> (tensor<4x8xf32>, tensor<4x8xi1>) loc("drop")
    %r = cleave.random_normal {mean = 0.000000e+00 : f32, scale = 2.000000e-02 : f32, seed = 7 : i64} : tensor<4x8xf32> loc("noise")
    %w1, %buf1 = cleave.sgd %w, %dw momentum_buffer(%buf) step(%t) {dampening = 0.0 : f32, lr = 0.05 : f32, momentum = 0.9 : f32, nesterov = true, weight_decay = 0.0 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>) loc("w.sgd")
    %u1, %m1, %v1 = cleave.adamw %u, %du, %m, %v step(%t) lr_factor(%f) {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, eps = 9.99999993E-9 : f32, lr = 0.00999999977 : f32, weight_decay = 0.00999999977 : f32} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) loc("u.adamw")
    return %out, %r, %w1, %buf1, %u1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// The ONNX training format's updates read the learning rate and the step
// from 0-d tensors (readScalar on the GPU) and write new tensors.

// CPU-LABEL: static void stepPart(
// CPU: onnxMomentumUpdate(w, gw, v, 4, lr[0], static_cast<int64_t>(step[0]), 8.999999762e-01f, 1.000000000e+00f, 0.000000000e+00f, true, momentum_0, momentum_1);  // momentum
// CPU: onnxAdamUpdate(w, gw, v, h, 4, lr[0], static_cast<int64_t>(step[0]), 8.999999762e-01f, 9.990000129e-01f, 9.999999939e-09f, 0.000000000e+00f, 0.000000000e+00f, adam_0, adam_1, adam_2);  // adam
// CPU: onnxAdagradUpdate(w, gw, h, 4, lr[0], static_cast<int64_t>(step[0]), 1.000000015e-01f, 9.999999747e-06f, 1.000000047e-03f, adagrad_0, adagrad_1);  // adagrad

// CUDA-LABEL: static void stepPart(
// CUDA: onnxMomentumUpdate(w, gw, v, 4, readScalar(lr), static_cast<int64_t>(readScalar(step)), 8.999999762e-01f, 1.000000000e+00f, 0.000000000e+00f, true, momentum_0, momentum_1);  // momentum
// CUDA: onnxAdagradUpdate(w, gw, h, 4, readScalar(lr), static_cast<int64_t>(readScalar(step)), 1.000000015e-01f, 9.999999747e-06f, 1.000000047e-03f, adagrad_0, adagrad_1);  // adagrad
module {
  func.func @step(%lr: tensor<f32> {cleave.input = "lr"},
                  %t: tensor<i64> {cleave.step},
                  %w: tensor<4xf32> {cleave.param = "w"},
                  %gw: tensor<4xf32> {cleave.input = "gw"},
                  %v: tensor<4xf32> {cleave.state = "v"},
                  %h: tensor<4xf32> {cleave.state = "h"})
      -> (tensor<4xf32> {cleave.output = "m_x"}, tensor<4xf32> {cleave.output = "m_v"},
          tensor<4xf32> {cleave.output = "a_x"}, tensor<4xf32> {cleave.output = "a_v"},
          tensor<4xf32> {cleave.output = "a_h"},
          tensor<4xf32> {cleave.output = "g_x"}, tensor<4xf32> {cleave.output = "g_h"}) {
    %nx, %nv = cleave.momentum %lr, %t params(%w) grads(%gw) velocities(%v) {alpha = 0.9 : f32, beta = 1.0 : f32, mode = #cleave.momentum_mode<nesterov>, norm_coefficient = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("momentum")
    %ax, %av, %ah = cleave.adam %lr, %t params(%w) grads(%gw) first_moments(%v) second_moments(%h) {alpha = 0.9 : f32, beta = 0.999 : f32, epsilon = 1.0e-8 : f32, norm_coefficient = 0.0 : f32, norm_coefficient_post = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) loc("adam")
    %gx, %gh = cleave.adagrad %lr, %t params(%w) grads(%gw) accumulators(%h) {decay_factor = 0.1 : f32, epsilon = 1.0e-5 : f32, norm_coefficient = 0.001 : f32} : (tensor<f32>, tensor<i64>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("adagrad")
    return %nx, %nv, %ax, %av, %ah, %gx, %gh : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
