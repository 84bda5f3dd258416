// RUN: cleave-translate --cleave-to-cpp %s | FileCheck %s --check-prefix=CPU
// RUN: cleave-translate --cleave-to-cuda %s | FileCheck %s --check-prefix=CUDA

// Losses are one runtime call each (runtime/KernelsLoss.cpp): the
// reduction as Reduction::, whether an ignore_index is given and its value
// (0 when none), the class weights or nullptr. The step reads the loss it
// reports from the loss result: directly on the host, through readScalar
// from the GPU.

// CPU-LABEL: static void stepPart(
// CPU: softmaxCrossEntropy(logits, Shape{4, 5}, y, nullptr, Reduction::Mean, true, -100, [[LOSS:ce_0]], [[LOGP:ce_1]]);  // ce
// CPU: softmaxCrossEntropyGrad(one, [[LOGP]], Shape{4, 5}, y, nullptr, Reduction::Mean, true, -100, ce_grad);  // ce_grad
// CPU: nllLoss([[LOGP]], Shape{4, 5}, y, w, Reduction::None, false, 0, [[NLL:nll]]);  // nll
// CPU: nllLossGrad([[NLL]], Shape{4, 5}, y, w, Reduction::None, false, 0, nll_grad);  // nll_grad
// CPU: static void trainStep(StepContext &ctx) {
// CPU: void *const refs[] = {(void *)(kone)};
// CPU: ctx.loss = static_cast<float>([[LOSS]][0]);

// CUDA-LABEL: static void stepPart(
// CUDA: softmaxCrossEntropy(logits, Shape{4, 5}, y, nullptr, Reduction::Mean, true, -100, ce_0, ce_1);  // ce
// CUDA-LABEL: static void trainStep(StepContext &ctx) {
// CUDA: const float *kone = deviceAddress(kone_data);
// CUDA: ctx.loss = static_cast<float>(readScalar(ce_0));
// CUDA: synchronize();
module {
  func.func @step(%logits: tensor<4x5xf32> {cleave.input = "logits"},
                  %y: tensor<4xi64> {cleave.input = "y"},
                  %w: tensor<5xf32> {cleave.param = "w"})
      -> (tensor<f32> {cleave.loss, cleave.output = "loss"},
          tensor<4x5xf32> {cleave.output = "dlogits"},
          tensor<4xf32> {cleave.output = "nll"},
          tensor<4x5xf32> {cleave.output = "dlogp"}) {
    %one = cleave.constant dense<1.000000e+00> : tensor<f32> loc("one")
    %loss, %logp = cleave.softmax_cross_entropy %logits, %y {ignore_index = -100 : i64, reduction = #cleave.reduction<mean>} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>) loc("ce")
    %d = cleave.softmax_cross_entropy_grad %one, %logp, %y {ignore_index = -100 : i64, reduction = #cleave.reduction<mean>} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32> loc("ce_grad")
    %nll = cleave.nll_loss %logp, %y, %w {reduction = #cleave.reduction<none>} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<4xf32> loc("nll")
    %dn = cleave.nll_loss_grad %nll, %y, %w {reduction = #cleave.reduction<none>} : (tensor<4xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<4x5xf32> loc("nll_grad")
    return %loss, %d, %nll, %dn : tensor<f32>, tensor<4x5xf32>, tensor<4xf32>, tensor<4x5xf32>
  }
}
