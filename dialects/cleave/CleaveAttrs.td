//===- CleaveAttrs.td - cleave dialect attributes ---------*- tablegen -*-===//

#ifndef CLEAVE_DIALECT_CLEAVEATTRS_TD
#define CLEAVE_DIALECT_CLEAVEATTRS_TD

include "dialects/cleave/CleaveBase.td"
include "mlir/IR/EnumAttr.td"

def Cleave_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines its per-sample values", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Sum", 1, "sum">,
      I32EnumAttrCase<"Mean", 2, "mean">]> {
  let cppNamespace = "::mlir::cleave";
  let genSpecializedAttr = 0;
}

def Cleave_LossReductionAttr
    : EnumAttr<Cleave_Dialect, Cleave_LossReduction, "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def Cleave_MomentumMode : I32EnumAttr<"MomentumMode",
    "the update rule of the ONNX Momentum optimizer", [
      I32EnumAttrCase<"Standard", 0, "standard">,
      I32EnumAttrCase<"Nesterov", 1, "nesterov">]> {
  let cppNamespace = "::mlir::cleave";
  let genSpecializedAttr = 0;
}

def Cleave_MomentumModeAttr
    : EnumAttr<Cleave_Dialect, Cleave_MomentumMode, "momentum_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // CLEAVE_DIALECT_CLEAVEATTRS_TD
