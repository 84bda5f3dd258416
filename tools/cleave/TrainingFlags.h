//===- TrainingFlags.h - what the training step computes --------*- C++ -*-===//
//
// The optimizer, its hyper-parameters and frozen parameters: shared by
// `cleave compile` and `cleave plan` (which passes them on in the flags
// of its plans).
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_TRAININGFLAGS_H
#define CLEAVE_TOOLS_CLEAVE_TRAININGFLAGS_H

#include "passes/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace cleave::driver {

namespace cl = llvm::cl;

enum class Optimizer { Sgd, AdamW };
enum ScheduleKind { constant, linear, cosine };

/// The training flags: optimizer, hyper-parameters, frozen parameters.
struct TrainingFlags {
  explicit TrainingFlags(cl::SubCommand &sub)
      : optimizer("optimizer", cl::desc("Optimizer (PyTorch semantics)"),
                  cl::values(clEnumValN(Optimizer::Sgd, "sgd", "torch.optim.SGD"),
                             clEnumValN(Optimizer::AdamW, "adamw",
                                        "torch.optim.AdamW")),
                  cl::init(Optimizer::Sgd), cl::sub(sub)),
        lr("lr", cl::desc("Learning rate"), cl::init(0.01), cl::sub(sub)),
        momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                 cl::sub(sub)),
        dampening("dampening", cl::desc("SGD dampening"), cl::init(0.0),
                  cl::sub(sub)),
        nesterov("nesterov", cl::desc("SGD Nesterov momentum"), cl::sub(sub)),
        weightDecay("weight-decay",
                    cl::desc("Weight decay (decoupled for AdamW; default 0 "
                             "for SGD, 0.01 for AdamW as in PyTorch)"),
                    cl::sub(sub)),
        betas("betas", cl::desc("AdamW betas"), cl::value_desc("B1,B2"),
              cl::init("0.9,0.999"), cl::sub(sub)),
        eps("eps", cl::desc("AdamW epsilon"), cl::init(1e-8), cl::sub(sub)),
        schedule("lr-schedule",
                 cl::desc("Learning-rate schedule after warmup"),
                 cl::values(clEnumVal(constant, "constant learning rate"),
                            clEnumVal(linear, "linear decay to --min-lr-factor"),
                            clEnumVal(cosine, "cosine decay to --min-lr-factor")),
                 cl::init(constant), cl::sub(sub)),
        warmupSteps("warmup-steps",
                    cl::desc("Steps of linear learning-rate warmup"),
                    cl::init(0), cl::sub(sub)),
        totalSteps("total-steps",
                   cl::desc("Step at which a decaying schedule ends"),
                   cl::init(0), cl::sub(sub)),
        minLrFactor("min-lr-factor",
                    cl::desc("Final learning rate of a decaying schedule, as "
                             "a fraction of --lr"),
                    cl::init(0.0), cl::sub(sub)),
        clipGradNorm("clip-grad-norm",
                     cl::desc("Clip gradients to this global L2 norm "
                              "(torch.nn.utils.clip_grad_norm_)"),
                     cl::init(0.0), cl::sub(sub)),
        freeze("freeze",
               cl::desc("Keep parameters matching this glob fixed; repeatable"),
               cl::value_desc("GLOB"), cl::sub(sub)) {}

  /// The optimizer pass options, or an error naming the bad flag.
  llvm::Expected<mlir::cleave::ApplyOptimizerPassOptions>
  optimizerOptions() const {
    auto fail = [](const llvm::Twine &message) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
    };
    // The values become float constants of the program.
    std::pair<const char *, double> values[] = {
        {"lr", lr},
        {"momentum", momentum},
        {"dampening", dampening},
        {"weight-decay", weightDecay},
        {"eps", eps},
        {"min-lr-factor", minLrFactor},
        {"clip-grad-norm", clipGradNorm}};
    for (auto [flag, value] : values)
      if (!std::isfinite(static_cast<float>(value)))
        return fail(llvm::formatv("--{0} must be a finite number within "
                                  "float32's range (magnitude below 3.4e38)",
                                  flag));
    if (lr <= 0)
      return fail("--lr must be positive");
    // A flag of the other optimizer would be ignored without a word.
    bool adamw = optimizer == Optimizer::AdamW;
    // The first two are AdamW's, the others SGD's.
    const cl::Option *flags[] = {&betas, &eps, &momentum, &dampening,
                                 &nesterov};
    for (const cl::Option *flag :
         llvm::ArrayRef(flags).slice(adamw ? 2 : 0, adamw ? 3 : 2))
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr + " applies to --optimizer " +
                    (adamw ? "sgd" : "adamw") + ", not " +
                    (adamw ? "adamw" : "sgd"));
    for (auto [flag, value] : {std::pair{"momentum", momentum.getValue()},
                               {"weight-decay", weightDecay.getValue()},
                               {"eps", eps.getValue()}})
      if (value < 0)
        return fail(llvm::formatv("--{0} must be >= 0 (as in PyTorch)", flag));
    if (optimizer == Optimizer::Sgd && momentum == 0 &&
        (nesterov || dampening != 0))
      return fail("--dampening and --nesterov need --momentum");
    if (nesterov && dampening != 0)
      return fail("--nesterov needs --dampening 0 (as in PyTorch)");
    auto [b1Text, b2Text] = llvm::StringRef(betas).split(',');
    double beta1, beta2;
    if (b1Text.getAsDouble(beta1) || b2Text.getAsDouble(beta2) ||
        !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
      return fail("--betas '" + betas + "' is not two numbers in [0, 1) "
                                        "separated by a comma");
    if (warmupSteps < 0)
      return fail("--warmup-steps must be >= 0");
    if (schedule != constant && totalSteps <= warmupSteps)
      return fail("--lr-schedule " +
                  llvm::Twine(schedule == linear ? "linear" : "cosine") +
                  " needs --total-steps greater than --warmup-steps");
    if (minLrFactor < 0 || minLrFactor > 1)
      return fail("--min-lr-factor must be in [0, 1]");
    if (clipGradNorm < 0)
      return fail("--clip-grad-norm must be >= 0");
    mlir::cleave::ApplyOptimizerPassOptions options;
    options.optimizer = optimizer == Optimizer::Sgd ? "sgd" : "adamw";
    options.lr = lr;
    options.momentum = momentum;
    options.dampening = dampening;
    options.nesterov = nesterov;
    options.weightDecay = weightDecay.getNumOccurrences()
                              ? weightDecay
                              : (optimizer == Optimizer::AdamW ? 0.01 : 0.0);
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.eps = eps;
    options.schedule = schedule == constant ? "constant"
                       : schedule == linear ? "linear"
                                            : "cosine";
    options.warmupSteps = warmupSteps;
    options.totalSteps = totalSteps;
    options.minLrFactor = minLrFactor;
    options.clipGradNorm = clipGradNorm;
    return options;
  }

  /// Checks the flags: the optimizer's values (optimizerOptions), and no
  /// training flag with `inference` (a forward-only program).
  llvm::Error validate(bool inference) const {
    if (std::string flag = firstGiven(); inference && !flag.empty())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          flag + " sets up training, but --inference compiles a "
                 "forward-only program; drop one of them");
    return optimizerOptions().takeError();
  }

  /// The first training flag given ("--lr", ...), or "" when none was.
  std::string firstGiven() const {
    const cl::Option *flags[] = {
        &optimizer,  &lr,       &momentum,    &dampening,    &nesterov,
        &weightDecay, &betas,   &eps,         &schedule,     &warmupSteps,
        &totalSteps, &minLrFactor, &clipGradNorm, std::addressof(freeze)};
    for (const cl::Option *flag : flags)
      if (flag->getNumOccurrences())
        return "--" + flag->ArgStr.str();
    return "";
  }

  /// The training flags given, as `--name=value` arguments that give
  /// `cleave compile` the same training step.
  std::vector<std::string> givenFlags() const {
    std::vector<std::string> flags;
    auto add = [&](const cl::Option &flag, const std::string &value) {
      if (flag.getNumOccurrences())
        flags.push_back("--" + flag.ArgStr.str() + "=" + value);
    };
    // The shortest text that reads back as the same double ("0.9", not
    // "0.90000000000000002").
    auto number = [](double value) {
      char text[32];
      for (int digits = 1; digits <= 17; ++digits) {
        std::snprintf(text, sizeof(text), "%.*g", digits, value);
        if (std::strtod(text, nullptr) == value)
          break;
      }
      return std::string(text);
    };
    add(optimizer, optimizer == Optimizer::Sgd ? "sgd" : "adamw");
    add(lr, number(lr));
    add(momentum, number(momentum));
    add(dampening, number(dampening));
    add(nesterov, nesterov ? "true" : "false");
    add(weightDecay, number(weightDecay));
    add(betas, betas);
    add(eps, number(eps));
    add(schedule, schedule == constant ? "constant"
                  : schedule == linear ? "linear"
                                       : "cosine");
    add(warmupSteps, std::to_string(warmupSteps));
    add(totalSteps, std::to_string(totalSteps));
    add(minLrFactor, number(minLrFactor));
    add(clipGradNorm, number(clipGradNorm));
    for (const std::string &glob : freeze)
      flags.push_back("--freeze=" + glob);
    return flags;
  }

  cl::opt<Optimizer> optimizer;
  cl::opt<double> lr, momentum, dampening;
  cl::opt<bool> nesterov;
  cl::opt<double> weightDecay;
  cl::opt<std::string> betas;
  cl::opt<double> eps;
  cl::opt<ScheduleKind> schedule;
  cl::opt<int64_t> warmupSteps, totalSteps;
  cl::opt<double> minLrFactor, clipGradNorm;
  cl::list<std::string> freeze;
};

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_TRAININGFLAGS_H
