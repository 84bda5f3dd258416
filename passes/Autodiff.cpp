//===- Autodiff.cpp - reverse-mode differentiation of the loss ------------===//
//
// Walks the forward ops backwards from the loss, building each op's
// operand gradients from its result gradient (one rule per op) and summing
// the contributions of values used more than once. Only values that both
// depend on a trainable parameter and feed the loss are differentiated.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialects/cleave/CleaveOps.h"
#include "dialects/cleave/TensorBuilder.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/GlobPattern.h"

#include <cmath>

namespace mlir::cleave {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

bool isFloatTensor(Value value) {
  return isa<FloatType>(tensorType(value).getElementType());
}

/// The location of the backward ops of `op`: its ONNX node name + "/grad".
Location gradLoc(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return NameLoc::get(
        StringAttr::get(op->getContext(), name.getName().str() + "/grad"),
        name.getChildLoc());
  return op->getLoc();
}

/// Gradients of one forward op's operands (null: none / not needed), from
/// the gradients of its results (null: the result does not reach the loss).
using OperandGrads = SmallVector<Value>;

/// reduce_sum / reduce_mean: broadcast the (scaled) gradient back.
template <typename ReduceOp>
FailureOr<OperandGrads> reduceRule(ReduceOp reduce, Value dy, double scale,
                                   TensorBuilder &g) {
  RankedTensorType inputType = tensorType(reduce.getInput());
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t axis : reduce.getAxes())
    kept[axis] = 1;
  Value grad = g.reshape(dy, kept);
  if (scale != 1.0)
    grad = g.mul(grad, scale);
  if (tensorType(grad).getShape() != inputType.getShape())
    grad = BroadcastToOp::create(g.b, g.loc, inputType, grad);
  return OperandGrads{grad};
}

FailureOr<OperandGrads> differentiate(Operation *op, ArrayRef<Value> resultGrads,
                                      TensorBuilder &g) {
  Value dy = resultGrads.empty() ? Value() : resultGrads.front();
  auto unsupported = [&]() -> FailureOr<OperandGrads> {
    return op->emitOpError()
           << "has no gradient rule; cleave cannot train through it (freeze "
              "the parameters before it, or rewrite the model)";
  };
  auto binaryRule = [&](auto rule) -> FailureOr<OperandGrads> {
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    auto [dl, dr] = rule(lhs, rhs);
    return OperandGrads{dl ? g.reduceTo(dl, lhs.getType()) : Value(),
                        dr ? g.reduceTo(dr, rhs.getType()) : Value()};
  };
  Type f = dy ? tensorType(dy).getElementType() : Type();

  return llvm::TypeSwitch<Operation *, FailureOr<OperandGrads>>(op)
      .Case([&](AddOp) {
        return binaryRule(
            [&](Value, Value) { return std::make_pair(dy, dy); });
      })
      .Case([&](SubOp) {
        return binaryRule(
            [&](Value, Value) { return std::make_pair(dy, g.neg(dy)); });
      })
      .Case([&](MulOp) {
        return binaryRule([&](Value a, Value c) {
          return std::make_pair(g.mul(dy, c), g.mul(dy, a));
        });
      })
      .Case([&](DivOp div) {
        return binaryRule([&](Value, Value c) {
          // d(a/c)/dc = -(a/c)/c
          return std::make_pair(g.div(dy, c),
                                g.neg(g.mul(dy, g.div(div.getResult(), c))));
        });
      })
      .Case([&](PowOp pow) -> FailureOr<OperandGrads> {
        Value base = pow.getBase(), exponent = pow.getExponent();
        if (!isFloatTensor(exponent))
          exponent = CastOp::create(
              g.b, g.loc,
              RankedTensorType::get(tensorType(exponent).getShape(), f),
              exponent);
        Value lowered = g.binary<PowOp>(base, g.sub(exponent, g.scalar(f, 1)));
        Value dBase = g.reduceTo(g.mul(dy, g.mul(exponent, lowered)),
                                 base.getType());
        Value dExp;
        if (isFloatTensor(pow.getExponent()))
          dExp = g.reduceTo(
              g.mul(dy, g.mul(pow.getResult(),
                              LogOp::create(g.b, g.loc, base.getType(), base))),
              pow.getExponent().getType());
        return OperandGrads{dBase, dExp};
      })
      .Case([&](NegOp) { return OperandGrads{g.neg(dy)}; })
      .Case([&](SqrtOp sqrt) {
        return OperandGrads{g.div(dy, g.mul(sqrt.getResult(), 2.0))};
      })
      .Case([&](ExpOp exp) { return OperandGrads{g.mul(dy, exp.getResult())}; })
      .Case([&](LogOp log) { return OperandGrads{g.div(dy, log.getInput())}; })
      .Case([&](TanhOp tanh) {
        Value y = tanh.getResult();
        return OperandGrads{
            g.mul(dy, g.sub(g.scalar(f, 1), g.mul(y, y)))};
      })
      .Case([&](SigmoidOp sigmoid) {
        Value y = sigmoid.getResult();
        return OperandGrads{
            g.mul(dy, g.mul(y, g.sub(g.scalar(f, 1), y)))};
      })
      .Case([&](ReluOp relu) {
        // x > 0 exactly where relu(x) > 0: reading the output leaves the
        // input to relu alone, which may then be computed in place (or by a
        // GEMM's ReLU epilogue on the cuda target).
        Value zero = g.scalar(f, 0);
        return OperandGrads{g.where(g.less(zero, relu.getResult()), dy, zero)};
      })
      .Case([&](ErfOp erf) {
        Value x = erf.getInput();
        Value gauss = ExpOp::create(g.b, g.loc, x.getType(),
                                    g.neg(g.mul(x, x)));
        return OperandGrads{g.mul(dy, g.mul(gauss, 2.0 / std::sqrt(M_PI)))};
      })
      .Case([&](WhereOp where) {
        Value zero = g.scalar(f, 0), cond = where.getCondition();
        return OperandGrads{
            Value(), g.reduceTo(g.where(cond, dy, zero), where.getOnTrue().getType()),
            g.reduceTo(g.where(cond, zero, dy), where.getOnFalse().getType())};
      })
      .Case([&](CastOp cast) -> FailureOr<OperandGrads> {
        if (!isFloatTensor(cast.getInput()))
          return OperandGrads{Value()};
        return OperandGrads{
            CastOp::create(g.b, g.loc, cast.getInput().getType(), dy)};
      })
      .Case([&](MatmulOp matmul) {
        Value a = matmul.getLhs(), c = matmul.getRhs();
        ArrayRef<int64_t> aShape = tensorType(a).getShape(),
                          cShape = tensorType(c).getShape();
        // Promote 1-d operands to matrices as numpy does.
        Value a2 = aShape.size() == 1
                       ? g.reshape(a, {1, aShape[0]})
                       : a;
        Value c2 = cShape.size() == 1 ? g.reshape(c, {cShape[0], 1}) : c;
        RankedTensorType full = g.matmulType(a2, c2);
        Value dy2 = g.reshape(dy, full.getShape());
        Value da = g.reduceTo(g.matmul(dy2, g.transposeLast2(c2)),
                              a2.getType());
        Value dc = g.reduceTo(g.matmul(g.transposeLast2(a2), dy2),
                              c2.getType());
        return OperandGrads{g.reshape(da, aShape), g.reshape(dc, cShape)};
      })
      .Case([&](GemmOp gemm) {
        Value a = gemm.getA(), c = gemm.getB();
        bool ta = gemm.getTransA(), tb = gemm.getTransB();
        float alpha = gemm.getAlpha().convertToFloat();
        auto gemmOf = [&](Value x, Value y, bool tx, bool ty, Type type) {
          return GemmOp::create(g.b, g.loc, type, x, y, Value(),
                                g.b.getF32FloatAttr(alpha),
                                g.b.getF32FloatAttr(0.0f), g.b.getBoolAttr(tx),
                                g.b.getBoolAttr(ty))
              .getResult();
        };
        // Y = alpha op(A) op(B): dop(A) = alpha dY op(B)^T,
        // dop(B) = alpha op(A)^T dY; transposed storage transposes those.
        Value da = ta ? gemmOf(c, dy, tb, true, a.getType())
                      : gemmOf(dy, c, false, !tb, a.getType());
        Value db = tb ? gemmOf(dy, a, true, ta, c.getType())
                      : gemmOf(a, dy, !ta, false, c.getType());
        Value dc;
        if (Value bias = gemm.getC()) {
          float beta = gemm.getBeta().convertToFloat();
          dc = g.reduceTo(beta == 1.0f ? dy : g.mul(dy, beta), bias.getType());
        }
        return OperandGrads{da, db, dc};
      })
      .Case([&](SoftmaxOp softmax) {
        return OperandGrads{SoftmaxGradOp::create(
            g.b, g.loc, softmax.getType(), softmax.getResult(), dy,
            softmax.getAxisAttr(), g.b.getBoolAttr(false))};
      })
      .Case([&](LogSoftmaxOp softmax) {
        return OperandGrads{SoftmaxGradOp::create(
            g.b, g.loc, softmax.getType(), softmax.getResult(), dy,
            softmax.getAxisAttr(), g.b.getBoolAttr(true))};
      })
      .Case([&](LayerNormOp norm) -> FailureOr<OperandGrads> {
        if (resultGrads[1] || resultGrads[2])
          return unsupported();
        auto grad = LayerNormGradOp::create(
            g.b, g.loc, norm.getInput().getType(), norm.getScale().getType(),
            norm.getScale().getType(), dy, norm.getInput(), norm.getScale(),
            norm.getMean(), norm.getInvStdDev(), norm.getAxisAttr());
        OperandGrads grads{grad.getInputGrad(), grad.getScaleGrad()};
        if (norm.getBias())
          grads.push_back(grad.getBiasGrad());
        return grads;
      })
      .Case([&](BatchNormOp norm) -> FailureOr<OperandGrads> {
        if (!dy)
          return unsupported();
        if (!norm.getTraining()) {
          // Inference mode (frozen statistics, as when fine-tuning a model
          // exported in eval mode): an affine map per channel.
          Value x = norm.getInput();
          SmallVector<int64_t> channel(tensorType(x).getRank(), 1);
          channel[1] = tensorType(x).getDimSize(1);
          SmallVector<int64_t> axes{0};
          for (int64_t i = 2; i < tensorType(x).getRank(); ++i)
            axes.push_back(i);
          Value rstd = g.div(
              g.scalar(f, 1.0),
              g.unary<SqrtOp>(g.add(
                  g.reshape(norm.getRunningVar(), channel),
                  norm.getEpsilon().convertToDouble())));
          Value xhat =
              g.mul(g.sub(x, g.reshape(norm.getRunningMean(), channel)), rstd);
          Value dx = g.mul(dy, g.mul(g.reshape(norm.getScale(), channel), rstd));
          Value dScale = g.reshape(g.reduceSum(g.mul(dy, xhat), axes, false),
                                   tensorType(norm.getScale()).getShape());
          Value dBias = g.reshape(g.reduceSum(dy, axes, false),
                                  tensorType(norm.getScale()).getShape());
          return OperandGrads{dx, dScale, dBias, Value(), Value()};
        }
        auto grad = BatchNormGradOp::create(
            g.b, g.loc, norm.getInput().getType(), norm.getScale().getType(),
            norm.getScale().getType(), dy, norm.getInput(), norm.getScale(),
            norm.getEpsilonAttr());
        return OperandGrads{grad.getInputGrad(), grad.getScaleGrad(),
                            grad.getBiasGrad(), Value(), Value()};
      })
      .Case([&](ReduceSumOp reduce) { return reduceRule(reduce, dy, 1.0, g); })
      .Case([&](ReduceMeanOp reduce) {
        int64_t count = 1;
        for (int64_t axis : reduce.getAxes())
          count *= tensorType(reduce.getInput()).getDimSize(axis);
        return reduceRule(reduce, dy, 1.0 / count, g);
      })
      .Case([&](ReduceMaxOp reduce) {
        // torch.amax's rule: the gradient is shared evenly by the elements
        // equal to the maximum.
        Value x = reduce.getInput();
        RankedTensorType inputType = tensorType(x);
        SmallVector<int64_t> kept(inputType.getShape());
        for (int64_t axis : reduce.getAxes())
          kept[axis] = 1;
        Value isMax = g.equal(x, g.reshape(reduce.getResult(), kept));
        Value count = g.reduceSum(g.castTo(isMax, f), reduce.getAxes(), true);
        Value share = g.div(g.reshape(dy, kept), count);
        return OperandGrads{g.broadcastTo(
            g.where(isMax, share, g.scalar(f, 0)), inputType.getShape())};
      })
      .Case([&](ReshapeOp reshape) {
        return OperandGrads{
            g.reshape(dy, tensorType(reshape.getInput()).getShape())};
      })
      .Case([&](TransposeOp transpose) {
        ArrayRef<int64_t> perm = transpose.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        return OperandGrads{g.transpose(dy, inverse)};
      })
      .Case([&](BroadcastToOp broadcast) {
        return OperandGrads{g.reduceTo(dy, broadcast.getInput().getType())};
      })
      .Case([&](ConcatOp concat) {
        OperandGrads grads;
        int64_t axis = concat.getAxis(), offset = 0;
        int64_t rank = tensorType(dy).getRank();
        for (Value input : concat.getInputs()) {
          SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
          offsets[axis] = offset;
          offset += tensorType(input).getDimSize(axis);
          grads.push_back(SliceOp::create(g.b, g.loc, input.getType(), dy,
                                          g.b.getDenseI64ArrayAttr(offsets),
                                          g.b.getDenseI64ArrayAttr(strides)));
        }
        return grads;
      })
      .Case([&](SplitOp split) {
        SmallVector<Value> pieces;
        for (auto [result, grad] : llvm::zip(split.getResults(), resultGrads))
          pieces.push_back(grad ? grad : g.zerosLike(result.getType()));
        return OperandGrads{ConcatOp::create(g.b, g.loc,
                                             split.getInput().getType(), pieces,
                                             split.getAxisAttr())};
      })
      .Case([&](SliceOp slice) {
        return OperandGrads{SliceGradOp::create(
            g.b, g.loc, slice.getInput().getType(), dy, slice.getOffsetsAttr(),
            slice.getStridesAttr())};
      })
      .Case([&](GatherOp gather) {
        return OperandGrads{
            GatherGradOp::create(g.b, g.loc, gather.getData().getType(), dy,
                                 gather.getIndices(), gather.getAxisAttr()),
            Value()};
      })
      .Case([&](ConvOp conv) {
        Value dx = ConvGradInputOp::create(
            g.b, g.loc, conv.getInput().getType(), dy, conv.getWeight(),
            conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
            conv.getGroupAttr());
        Value dw = ConvGradWeightOp::create(
            g.b, g.loc, conv.getWeight().getType(), dy, conv.getInput(),
            conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
            conv.getGroupAttr());
        OperandGrads grads{dx, dw};
        if (conv.getBias()) {
          SmallVector<int64_t> axes{0};
          for (int64_t i = 2; i < tensorType(dy).getRank(); ++i)
            axes.push_back(i);
          grads.push_back(g.reduceSum(dy, axes, false));
        }
        return grads;
      })
      .Case([&](ConvGradInputOp transposed) {
        // A transposed convolution (ONNX ConvTranspose): its input's
        // gradient is the forward conv of dy, its weight's the conv weight
        // gradient with the roles of input and output swapped.
        Value x = transposed.getOutputGrad(), w = transposed.getWeight();
        Value dx = ConvOp::create(g.b, g.loc, x.getType(), dy, w, Value(),
                                  transposed.getStridesAttr(),
                                  transposed.getPadsAttr(),
                                  transposed.getDilationsAttr(),
                                  transposed.getGroupAttr());
        Value dw = ConvGradWeightOp::create(
            g.b, g.loc, w.getType(), x, dy, transposed.getStridesAttr(),
            transposed.getPadsAttr(), transposed.getDilationsAttr(),
            transposed.getGroupAttr());
        return OperandGrads{dx, dw};
      })
      .Case([&](MaxPoolOp pool) {
        return OperandGrads{MaxPoolGradOp::create(
            g.b, g.loc, pool.getInput().getType(), dy, pool.getInput(),
            pool.getKernelShapeAttr(), pool.getStridesAttr(),
            pool.getPadsAttr(), pool.getCeilModeAttr(),
            pool.getDilationsAttr())};
      })
      .Case([&](AvgPoolOp pool) {
        return OperandGrads{AvgPoolGradOp::create(
            g.b, g.loc, pool.getInput().getType(), dy,
            pool.getKernelShapeAttr(), pool.getStridesAttr(),
            pool.getPadsAttr(), pool.getCeilModeAttr(),
            pool.getCountIncludePadAttr())};
      })
      .Case([&](DropoutOp dropout) {
        if (!dropout.getTraining() || dropout.getRatio().isZero())
          return OperandGrads{dy};
        double scale = 1.0 / (1.0 - dropout.getRatio().convertToDouble());
        return OperandGrads{g.where(dropout.getMask(), g.mul(dy, scale),
                                    g.scalar(f, 0))};
      })
      .Case([&](SoftmaxCrossEntropyOp loss) {
        Value dScores;
        if (resultGrads[0])
          dScores = SoftmaxCrossEntropyGradOp::create(
              g.b, g.loc, loss.getScores().getType(), resultGrads[0],
              loss.getLogProb(), loss.getLabels(), loss.getWeights(),
              loss.getReductionAttr(), loss.getIgnoreIndexAttr());
        if (Value dLogProb = resultGrads[1]) {
          Value viaLogProb = SoftmaxGradOp::create(
              g.b, g.loc, loss.getScores().getType(), loss.getLogProb(),
              dLogProb, g.b.getI64IntegerAttr(1), g.b.getBoolAttr(true));
          dScores = dScores ? g.add(dScores, viaLogProb) : viaLogProb;
        }
        return OperandGrads{dScores, Value(), Value()};
      })
      .Case([&](NllLossOp loss) {
        return OperandGrads{
            NllLossGradOp::create(g.b, g.loc, loss.getInput().getType(), dy,
                                  loss.getTarget(), loss.getWeight(),
                                  loss.getReductionAttr(),
                                  loss.getIgnoreIndexAttr()),
            Value(), Value()};
      })
      .Default([&](Operation *) { return unsupported(); });
}

} // namespace

FailureOr<SmallVector<Value>>
mlir::cleave::buildGradients(OpBuilder &builder, ArrayRef<Operation *> forward,
                             Value loss, ArrayRef<Value> wrt) {
  // Active values: depend on a `wrt` value and feed the loss.
  llvm::DenseSet<Value> varying, useful;
  varying.insert(wrt.begin(), wrt.end());
  for (Operation *op : forward)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varying.contains(v); }))
      for (Value result : op->getResults())
        if (isFloatTensor(result))
          varying.insert(result);
  useful.insert(loss);
  for (Operation *op : llvm::reverse(forward))
    if (llvm::any_of(op->getResults(),
                     [&](Value v) { return useful.contains(v); }))
      for (Value operand : op->getOperands())
        useful.insert(operand);
  auto active = [&](Value v) {
    return varying.contains(v) && useful.contains(v) && isFloatTensor(v);
  };

  llvm::DenseMap<Value, Value> adjoint;
  auto lossType = tensorType(loss);
  adjoint[loss] = ConstantOp::create(
      builder, loss.getLoc(),
      DenseElementsAttr::get(
          lossType, builder.getFloatAttr(lossType.getElementType(), 1.0)));
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value result : op->getResults()) {
      Value grad = adjoint.lookup(result);
      resultGrads.push_back(grad);
      any |= grad != nullptr;
    }
    if (!any || llvm::none_of(op->getOperands(), active))
      continue;
    TensorBuilder g(builder, gradLoc(op));
    FailureOr<OperandGrads> grads = differentiate(op, resultGrads, g);
    if (failed(grads))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), *grads)) {
      if (!grad || !active(operand))
        continue;
      if (Value previous = adjoint.lookup(operand))
        grad = g.add(previous, grad);
      adjoint[operand] = grad;
    }
  }
  SmallVector<Value> grads;
  for (Value value : wrt) {
    Value grad = adjoint.lookup(value);
    if (!grad)
      grad = TensorBuilder(builder, value.getLoc()).zerosLike(value.getType());
    grads.push_back(grad);
  }
  return grads;
}

namespace {

struct AutodiffPass : mlir::cleave::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    std::optional<unsigned> lossIndex;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      if (func.getResultAttr(i, CleaveDialect::kLossAttrName))
        lossIndex = i;
      // A training_info algorithm already computes its own updates.
      if (func.getResultAttr(i, CleaveDialect::kUpdateAttrName))
        return;
    }
    if (!lossIndex)
      return;
    if (failed(differentiateFunction(func, *lossIndex)))
      signalPassFailure();
  }

  LogicalResult differentiateFunction(func::FuncOp func, unsigned lossIndex);
};

LogicalResult AutodiffPass::differentiateFunction(func::FuncOp func,
                                                  unsigned lossIndex) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(lossIndex);

  SmallVector<llvm::GlobPattern> frozen;
  for (const std::string &text : freeze) {
    auto pattern = llvm::GlobPattern::create(text);
    if (!pattern)
      return func.emitError() << "freeze pattern '" << text
                              << "' is not a valid glob: "
                              << llvm::toString(pattern.takeError());
    frozen.push_back(std::move(*pattern));
  }

  // Trainable parameters, in argument order.
  SmallVector<std::pair<BlockArgument, StringAttr>> params;
  for (BlockArgument arg : body.getArguments())
    if (auto name = func.getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), CleaveDialect::kParamAttrName))
      if (llvm::none_of(frozen, [&](const llvm::GlobPattern &p) {
            return p.match(name.getValue());
          }))
        params.emplace_back(arg, name);

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  SmallVector<Value> wrt;
  for (auto &[arg, name] : params)
    wrt.push_back(arg);
  OpBuilder builder(ret);
  FailureOr<SmallVector<Value>> grads =
      buildGradients(builder, forward, loss, wrt);
  if (failed(grads))
    return failure();
  // No parameter to train, or every gradient a constant (zero): the
  // program would run and change nothing.
  if (params.empty() || llvm::all_of(*grads, [](Value grad) {
        return grad.getDefiningOp<ConstantOp>() != nullptr;
      })) {
    InFlightDiagnostic diag = func.emitError();
    if (params.empty())
      diag << "the model has no trainable parameter"
           << (frozen.empty() ? "" : " (the freeze patterns match them all)");
    else
      diag << "the loss depends on none of the " << params.size()
           << " trainable parameters";
    return diag << "; training would change nothing: build a forward-only "
                   "program instead";
  }

  // Results: the original ones, then one gradient per parameter, then the
  // running statistics of training-mode batch norms.
  SmallVector<Value> results(ret.getOperands());
  SmallVector<std::pair<StringRef, StringAttr>> attrs;
  for (auto [param, grad] : llvm::zip(params, *grads)) {
    results.push_back(grad);
    attrs.emplace_back(CleaveDialect::kGradAttrName, param.second);
  }
  for (Operation *op : forward) {
    auto norm = dyn_cast<BatchNormOp>(op);
    if (!norm || !norm.getTraining())
      continue;
    for (auto [stat, updated] :
         {std::pair<Value, Value>{norm.getRunningMean(),
                                  norm.getNewRunningMean()},
          {norm.getRunningVar(), norm.getNewRunningVar()}}) {
      auto arg = dyn_cast<BlockArgument>(stat);
      StringAttr name =
          arg ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  CleaveDialect::kStateAttrName)
              : StringAttr();
      if (!name)
        continue;
      results.push_back(updated);
      attrs.emplace_back(CleaveDialect::kUpdateAttrName, name);
    }
  }
  unsigned firstNew = ret.getNumOperands();
  func::ReturnOp::create(builder, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes(func.getResultTypes());
  for (Value v : ArrayRef<Value>(results).drop_front(firstNew))
    resultTypes.push_back(v.getType());
  // All result attributes in one edit (one at a time is quadratic).
  SmallVector<DictionaryAttr> resultAttrs;
  func.getAllResultAttrs(resultAttrs);
  MLIRContext *ctx = func.getContext();
  for (auto [name, value] : attrs)
    resultAttrs.push_back(
        DictionaryAttr::get(ctx, {NamedAttribute(name, value)}));
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

} // namespace
