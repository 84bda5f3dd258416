//===- OnnxImporter.cpp - ONNX model to the cleave dialect ----------------===//
//
// Drives the import: loads the model, decides which initializers are
// parameters, imports the inference graph and each training algorithm, marks
// the loss and checks the training_info bindings.
//
//===----------------------------------------------------------------------===//

#include "frontend/OnnxImporter.h"
#include "frontend/GraphImporter.h"
#include "frontend/IndexInputRanges.h"
#include "frontend/TensorSize.h"

#include "dialects/cleave/CleaveOps.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstring>
#include <set>

namespace mlir::cleave {

namespace {

const OpImportTable &importTable() {
  static const OpImportTable table = [] {
    OpImportTable t;
    registerElementwiseImporters(t);
    registerLinalgImporters(t);
    registerNormalizationImporters(t);
    registerTensorImporters(t);
    registerConvolutionImporters(t);
    registerLossImporters(t);
    registerTrainingImporters(t);
    registerActivationImporters(t);
    registerSpatialImporters(t);
    registerEinsumImporters(t);
    return t;
  }();
  return table;
}

/// A valid symbol from an ONNX graph name.
std::string symbolName(StringRef graphName, StringRef fallback) {
  std::string name;
  for (char c : graphName)
    name += llvm::isAlnum(c) || c == '_' ? c : '_';
  return name.empty() ? fallback.str() : name;
}

bool isFloatType(int32_t type) {
  return type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
         type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16;
}

/// Initializers a BatchNormalization reads as running statistics: mutable
/// state, not trained by gradients.
std::set<std::string> runningStatistics(const onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const auto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        names.insert(node.input(i));
  return names;
}

/// Whether a float32 initializer held in the file (not external data,
/// which planning never reads) has an infinite element and no NaN: a
/// PyTorch buffer such as a causal attention mask
/// (`torch.triu(torch.full((S, S), float("-inf")), 1)`), which no
/// gradient step could train.
bool holdsInfinity(const onnx::TensorProto &init) {
  if (init.data_type() != onnx::TensorProto::FLOAT ||
      init.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  bool infinite = false;
  auto check = [&](float value) {
    if (std::isnan(value))
      return false;
    infinite |= std::isinf(value);
    return true;
  };
  if (init.has_raw_data()) {
    const std::string &raw = init.raw_data();
    for (size_t at = 0; at + sizeof(float) <= raw.size(); at += sizeof(float)) {
      float value;
      std::memcpy(&value, raw.data() + at, sizeof(float));
      if (!check(value))
        return false;
    }
  } else {
    for (float value : init.float_data())
      if (!check(value))
        return false;
  }
  return infinite;
}

/// Role of an inference-graph initializer: float tensors are parameters,
/// except running statistics (state), the constants torch names `onnx::*`
/// and infinite masks (holdsInfinity); integer and boolean tensors (masks,
/// position ids, shapes) are constants.
InitializerRole modelRole(const onnx::TensorProto &init,
                          const std::set<std::string> &stateNames,
                          const std::set<std::string> &mutableNames,
                          const std::set<std::string> &foldedConstants) {
  if (foldedConstants.count(init.name()))
    return InitializerRole::Constant;
  if (stateNames.count(init.name()))
    return InitializerRole::State;
  if (mutableNames.count(init.name()))
    return InitializerRole::Param;
  if (!isFloatType(init.data_type()) ||
      StringRef(init.name()).starts_with("onnx::") || holdsInfinity(init))
    return InitializerRole::Constant;
  return InitializerRole::Param;
}

bool isScalar(Type type) {
  return cast<RankedTensorType>(type).getNumElements() == 1;
}

std::string describeOutputs(func::FuncOp func) {
  std::string text;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto name = func.getResultAttrOfType<StringAttr>(
        i, CleaveDialect::kOutputAttrName);
    std::string type;
    llvm::raw_string_ostream os(type);
    os << func.getResultTypes()[i];
    text += (text.empty() ? "" : ", ") + name.getValue().str() + " (" + type +
            ")";
  }
  return text;
}

/// Marks the training loss on the inference function.
LogicalResult markLoss(func::FuncOp func, const ImportOptions &options,
                       bool hasTrainingInfo, Location loc) {
  auto outputName = [&](unsigned i) {
    return func
        .getResultAttrOfType<StringAttr>(i, CleaveDialect::kOutputAttrName)
        .getValue();
  };
  std::optional<unsigned> loss;
  if (!options.loss.empty() && options.inference)
    return emitError(loc) << "--loss and --inference contradict each other: "
                             "an inference import has no loss";
  if (!options.loss.empty()) {
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (outputName(i) == options.loss)
        loss = i;
    if (!loss)
      return emitError(loc) << "--loss '" << options.loss
                            << "' is not a graph output; outputs: "
                            << describeOutputs(func);
    if (!isScalar(func.getResultTypes()[*loss]))
      return emitError(loc) << "loss '" << options.loss << "' has type "
                            << func.getResultTypes()[*loss]
                            << " but a training loss must be a scalar; reduce "
                               "it (for example reduction='mean') before "
                               "export";
  } else {
    if (options.inference || hasTrainingInfo)
      return success();
    SmallVector<unsigned> scalars;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (isScalar(func.getResultTypes()[i]))
        scalars.push_back(i);
    if (scalars.empty())
      return emitError(loc)
             << "the model has no scalar output to train on (outputs: "
             << describeOutputs(func)
             << "); export the model with its loss (a scalar) as an output, "
                "or import with --inference";
    if (scalars.size() > 1) {
      std::string names;
      for (unsigned i : scalars)
        names += (names.empty() ? "" : ", ") + outputName(i).str();
      return emitError(loc) << "several scalar outputs could be the loss ("
                            << names << "); choose one with --loss NAME";
    }
    loss = scalars.front();
  }
  Type element =
      cast<RankedTensorType>(func.getResultTypes()[*loss]).getElementType();
  if (!element.isF32())
    return emitError(loc) << "loss '" << outputName(*loss) << "' is " << element
                          << ", but a training loss is a float32 scalar; "
                             "export the model in float32 (model.float()), "
                             "with the loss before any cast",
           failure();
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto input =
            func.getArgAttrOfType<StringAttr>(i, CleaveDialect::kInputAttrName);
        input &&
        llvm::is_contained(
            cast<RankedTensorType>(func.getArgumentTypes()[i]).getShape(), 0))
      return emitError(loc)
                 << "input '" << input.getValue() << "' has shape ["
                 << cast<RankedTensorType>(func.getArgumentTypes()[i])
                        .getShape()
                 << "]: a dimension of size 0 leaves nothing to train on "
                    "(the mean loss would be 0/0); "
                    "give it a size (with --input-shape for a dynamic dim)",
             failure();
  func.setResultAttr(*loss, CleaveDialect::kLossAttrName,
                     UnitAttr::get(func.getContext()));
  return success();
}

/// Checks one training_info's update_binding against the graphs (ONNX
/// TrainingInfoProto rules) and returns key -> value.
FailureOr<std::vector<std::pair<std::string, std::string>>>
checkBindings(const onnx::ModelProto &model, const onnx::TrainingInfoProto &info,
              size_t index, std::set<std::string> &seenKeys, Location loc) {
  std::map<std::string, const onnx::TensorProto *> initializers;
  for (const auto &init : model.graph().initializer())
    initializers[init.name()] = &init;
  for (const auto &init : info.algorithm().initializer())
    initializers[init.name()] = &init;
  std::set<std::string> outputs;
  for (const auto &output : info.algorithm().output())
    outputs.insert(output.name());
  for (const auto &output : model.graph().output())
    outputs.insert(output.name());

  std::vector<std::pair<std::string, std::string>> bindings;
  for (const auto &entry : info.update_binding()) {
    const std::string &key = entry.key(), &value = entry.value();
    if (!initializers.count(key))
      return emitError(loc)
                 << "training_info[" << index << "] update_binding key '" << key
                 << "' names no initializer of the model graph or of the "
                    "algorithm graph; each key must be a tensor the algorithm "
                    "updates",
             failure();
    if (!outputs.count(value))
      return emitError(loc)
                 << "training_info[" << index << "] update_binding of '" << key
                 << "' takes its value from '" << value
                 << "', which is not an output of the algorithm graph or the "
                    "model graph; list it in algorithm.output",
             failure();
    if (!seenKeys.insert(key).second)
      return emitError(loc) << "training_info[" << index << "] updates '" << key
                            << "' a second time; each tensor may be bound once",
             failure();
    bindings.emplace_back(key, value);
  }
  return bindings;
}

/// Checks that every Gradient node of an algorithm names model inputs or
/// initializers in xs/zs and a model output in y.
LogicalResult checkGradients(const onnx::ModelProto &model,
                             const onnx::GraphProto &algorithm, Location loc) {
  std::set<std::string> arguments, outputs;
  for (const auto &input : model.graph().input())
    arguments.insert(input.name());
  for (const auto &init : model.graph().initializer())
    arguments.insert(init.name());
  for (const auto &output : model.graph().output())
    outputs.insert(output.name());
  for (const auto &node : algorithm.node()) {
    if (node.domain() != ::cleave::frontend::kTrainingDomain ||
        node.op_type() != "Gradient")
      continue;
    for (const auto &attr : node.attribute()) {
      if (attr.name() == "y" && !outputs.count(attr.s()))
        return emitError(loc) << "node '" << node.name()
                              << "' (Gradient): y names '" << attr.s()
                              << "', which is not an output of the model "
                                 "graph; differentiate a model output";
      if (attr.name() != "xs" && attr.name() != "zs")
        continue;
      for (const std::string &name : attr.strings())
        if (!arguments.count(name))
          return emitError(loc)
                 << "node '" << node.name() << "' (Gradient): " << attr.name()
                 << " names '" << name
                 << "', which is neither an input nor an initializer of the "
                    "model graph";
    }
  }
  return success();
}

/// Imports training_info[index]'s algorithm (combined with the inference
/// graph) as its own function whose results carry `cleave.update`.
LogicalResult importAlgorithm(GraphImporter &importer, ModuleOp module,
                              const ::cleave::frontend::LoadedModel &loaded,
                              size_t index, std::set<std::string> &seenKeys,
                              Location loc) {
  const onnx::ModelProto &model = loaded.model;
  const onnx::TrainingInfoProto &info = model.training_info(index);
  FailureOr<std::vector<std::pair<std::string, std::string>>> bindings =
      checkBindings(model, info, index, seenKeys, loc);
  if (failed(bindings) || failed(checkGradients(model, info.algorithm(), loc)))
    return failure();

  std::set<std::string> keys, algorithmInitializers;
  for (const auto &[key, value] : *bindings)
    keys.insert(key);
  for (const auto &init : info.algorithm().initializer())
    algorithmInitializers.insert(init.name());
  std::set<std::string> stats = runningStatistics(model.graph());

  // Bound values that are model outputs become results of the algorithm.
  onnx::GraphProto graph = loaded.algorithms[index];
  std::set<std::string> outputs;
  for (const auto &output : graph.output())
    outputs.insert(output.name());
  for (const auto &[key, value] : *bindings)
    if (outputs.insert(value).second)
      for (const auto &output : model.graph().output())
        if (output.name() == value)
          *graph.add_output() = output;

  std::string name = symbolName(info.algorithm().name(), "training_step");
  SymbolTable symbols(module);
  for (int suffix = 1; symbols.lookup(name); ++suffix)
    name = symbolName(info.algorithm().name(), "training_step") + "_" +
           std::to_string(suffix);
  FailureOr<func::FuncOp> func = importer.importGraph(
      graph, name, [&](const onnx::TensorProto &init) {
        if (algorithmInitializers.count(init.name()))
          return keys.count(init.name()) ? InitializerRole::State
                                         : InitializerRole::Constant;
        return modelRole(init, stats, keys, loaded.foldedConstants);
      });
  if (failed(func))
    return failure();
  for (unsigned i = 0; i < func->getNumResults(); ++i) {
    StringRef output =
        func->getResultAttrOfType<StringAttr>(i, CleaveDialect::kOutputAttrName)
            .getValue();
    for (const auto &[key, value] : *bindings)
      if (value == output) {
        Type target;
        for (unsigned a = 0; a < func->getNumArguments(); ++a)
          for (StringRef kind :
               {CleaveDialect::kParamAttrName, CleaveDialect::kStateAttrName})
            if (auto attr = func->getArgAttrOfType<StringAttr>(a, kind))
              if (attr.getValue() == key)
                target = func->getArgument(a).getType();
        if (target != func->getResultTypes()[i])
          return emitError(loc) << "training_info[" << index
                                << "] binds '" << output << "' of type "
                                << func->getResultTypes()[i] << " to '" << key
                                << "' of type " << target
                                << "; the types must match",
                 failure();
        func->setResultAttr(i, CleaveDialect::kUpdateAttrName,
                            StringAttr::get(module.getContext(), key));
      }
  }
  return success();
}

/// Removes ops whose results are unused and that have no side effects (the
/// inference nodes an algorithm function does not need, unused constants).
void eraseDeadOps(ModuleOp module) {
  module.walk([](func::FuncOp func) {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (isOpTriviallyDead(op))
        op->erase();
  });
}

/// Refuses a node whose result has more than 2^48 elements (a broadcast of
/// two huge dims, say): its byte size would overflow later arithmetic.
/// Inputs and initializers were checked as they were read.
LogicalResult checkResultSizes(ModuleOp module) {
  WalkResult walk = module.walk([](Operation *op) {
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || ::cleave::frontend::checkedElementCount(type.getShape()))
        continue;
      op->emitError() << "produces a tensor of shape ["
                      << llvm::make_range(type.getShape().begin(),
                                          type.getShape().end())
                      << "], more than 2^48 elements; check the model's "
                         "sizes and those given with --input-shape";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Imports the model the loader returned for the file (or buffer) `path`.
OwningOpRef<ModuleOp>
importLoadedModel(MLIRContext &context, StringRef path,
                  llvm::Expected<::cleave::frontend::LoadedModel> loaded,
                  const ImportOptions &options, ImportArtifacts *artifacts) {
  context.loadDialect<CleaveDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  if (!loaded) {
    emitError(fileLoc) << llvm::toString(loaded.takeError());
    return {};
  }
  const onnx::ModelProto &model = loaded->model;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(CleaveDialect::kSourceAttrName,
                     StringAttr::get(&context, path));
  std::string mainName = symbolName(model.graph().name(), "main");
  GraphImporter importer(*module, path, loaded->opset, mainName, importTable());
  importer.setBatchDims(loaded->batchDims);
  SmallVector<NamedAttribute> batchDims;
  for (const auto &[input, dim] : loaded->batchDims)
    if (dim != 0)
      batchDims.push_back(NamedAttribute(
          StringAttr::get(&context, input),
          IntegerAttr::get(IntegerType::get(&context, 64), dim)));
  if (!batchDims.empty())
    (*module)->setAttr(CleaveDialect::kBatchDimsAttrName,
                       DictionaryAttr::get(&context, batchDims));

  std::set<std::string> mutableNames;
  for (const auto &info : model.training_info())
    for (const auto &entry : info.update_binding())
      mutableNames.insert(entry.key());
  std::set<std::string> stats = runningStatistics(model.graph());
  FailureOr<func::FuncOp> mainFunc = importer.importGraph(
      model.graph(), mainName, [&](const onnx::TensorProto &init) {
        return modelRole(init, stats, mutableNames, loaded->foldedConstants);
      });
  if (failed(mainFunc))
    return {};
  if (failed(markLoss(*mainFunc, options, model.training_info_size() > 0,
                      fileLoc)))
    return {};

  std::set<std::string> seenKeys;
  for (int i = 0; i < model.training_info_size(); ++i)
    if (failed(importAlgorithm(importer, *module, *loaded, i, seenKeys,
                               fileLoc)))
      return {};

  eraseDeadOps(*module);
  if (failed(checkResultSizes(*module)) || failed(verify(*module)))
    return {};
  // Reads the shapes the ops' verifiers guarantee (a loss's class dim).
  module->walk([](func::FuncOp func) { annotateIndexInputRanges(func); });
  if (artifacts) {
    artifacts->initialValues = std::move(importer.initialValues());
    loaded->original.SerializeToString(&artifacts->originalModel);
    for (const auto &prop : loaded->original.metadata_props())
      artifacts->metadata[prop.key()] = prop.value();
  }
  return module;
}

::cleave::frontend::LoadOptions loadOptions(const ImportOptions &options) {
  ::cleave::frontend::LoadOptions load;
  load.shapeBindings = options.shapeBindings;
  load.batchSymbol = options.batchSymbol;
  load.runInitialization = options.runInitialization;
  return load;
}

} // namespace

std::vector<std::string> supportedOnnxOperators() {
  return supportedOnnxOperatorsOf(importTable());
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, StringRef path,
                                      const ImportOptions &options,
                                      ImportArtifacts *artifacts) {
  return importLoadedModel(
      context, path,
      ::cleave::frontend::loadOnnxModel(path, loadOptions(options)), options,
      artifacts);
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context,
                                      llvm::MemoryBufferRef model,
                                      const ImportOptions &options,
                                      ImportArtifacts *artifacts) {
  return importLoadedModel(
      context, model.getBufferIdentifier(),
      ::cleave::frontend::loadOnnxModel(model, loadOptions(options)), options,
      artifacts);
}

} // namespace mlir::cleave
