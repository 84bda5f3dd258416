//===- ElementwiseBodies.h - per-element math of all targets ----*- C++ -*-===//
//
// Part of the Cleave runtime. Each functor is the math of one element of an
// elementwise op or optimizer step, written once and called from the cpu
// loops (Elementwise.h, KernelsTraining.cpp) and from the cuda kernels; keep
// them free of anything device code cannot call.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_RUNTIME_ELEMENTWISEBODIES_H
#define CLEAVE_RUNTIME_ELEMENTWISEBODIES_H

#include "runtime/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace cleave::body {

//===----------------------------------------------------------------------===//
// Binary arithmetic and comparisons
//===----------------------------------------------------------------------===//

struct Add {
  template <typename T> CLEAVE_HD T operator()(T a, T b) const { return a + b; }
};

struct Sub {
  template <typename T> CLEAVE_HD T operator()(T a, T b) const { return a - b; }
};

struct Mul {
  template <typename T> CLEAVE_HD T operator()(T a, T b) const { return a * b; }
};

/// Integer division truncates toward zero, as ONNX's reference does.
struct Div {
  template <typename T> CLEAVE_HD T operator()(T a, T b) const { return a / b; }
};

/// ONNX Pow: the result has the base's type; the exponent may differ.
struct Pow {
  template <typename T, typename E> CLEAVE_HD T operator()(T a, E b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return std::pow(a, static_cast<T>(b));
    } else if constexpr (std::is_floating_point_v<E>) {
      return static_cast<T>(
          std::pow(static_cast<double>(a), static_cast<double>(b)));
    } else {
      // Exact integer power by squaring; a negative exponent truncates
      // 1 / a^-b toward zero.
      if (b < 0) {
        if (a == 1)
          return 1;
        if (a == -1)
          return (b % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
      // Unsigned 64-bit arithmetic wraps on overflow (as numpy does)
      // instead of being undefined; its low bits are the two's complement
      // product in T.
      uint64_t result = 1;
      uint64_t base = static_cast<uint64_t>(a);
      for (E e = b; e > 0; e >>= 1) {
        if (e & 1)
          result *= base;
        if (e > 1)
          base *= base;
      }
      return static_cast<T>(result);
    }
  }
};

struct Equal {
  template <typename T> CLEAVE_HD bool operator()(T a, T b) const {
    return a == b;
  }
};

struct Less {
  template <typename T> CLEAVE_HD bool operator()(T a, T b) const {
    return a < b;
  }
};

struct Where {
  template <typename T> CLEAVE_HD T operator()(bool cond, T a, T b) const {
    return cond ? a : b;
  }
};

//===----------------------------------------------------------------------===//
// Unary math
//===----------------------------------------------------------------------===//

struct Sqrt {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct Neg {
  template <typename T> CLEAVE_HD T operator()(T x) const { return -x; }
};

struct Erf {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return std::erf(x);
  }
};

struct Tanh {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return std::tanh(x);
  }
};

/// Never evaluates exp of a large positive argument, so it neither
/// overflows nor loses the tiny results for very negative x: with
/// e = exp(-|x|), 1 / (1 + e) for x >= 0 and e / (1 + e) below. One exp
/// and no branch, so that it vectorizes.
struct Sigmoid {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    T e = std::exp(-std::fabs(x));
    T r = T(1) / (T(1) + e);
    return x >= T(0) ? r : e * r;
  }
};

/// Written so that NaN propagates, as torch.relu does.
struct Relu {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

struct Exp {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return std::exp(x);
  }
};

struct Log {
  template <typename T> CLEAVE_HD T operator()(T x) const {
    return std::log(x);
  }
};

template <typename To> struct Cast {
  template <typename From> CLEAVE_HD To operator()(From x) const {
    return static_cast<To>(x);
  }
};

//===----------------------------------------------------------------------===//
// Optimizer steps
//===----------------------------------------------------------------------===//

/// One element of torch.optim.SGD. `buf` is the momentum buffer (unused when
/// momentum == 0); returns the new parameter.
struct SgdStep {
  float lr;
  float momentum;
  float dampening;
  float weightDecay;
  bool nesterov;
  /// PyTorch initializes the buffer to the gradient on the first step.
  bool firstStep;

  /// The update with the momentum and weight-decay tests hoisted, so that
  /// loops over one tensor vectorize.
  template <bool HasMomentum, bool HasDecay>
  CLEAVE_HD float apply(float param, float grad, float &buf) const {
    float g = grad;
    if (HasDecay)
      g = g + weightDecay * param;
    if (HasMomentum) {
      buf = firstStep ? g : buf * momentum + (1.0f - dampening) * g;
      g = nesterov ? g + momentum * buf : buf;
    }
    return param + -lr * g;
  }

  CLEAVE_HD float operator()(float param, float grad, float &buf) const {
    if (momentum != 0.0f)
      return weightDecay != 0.0f ? apply<true, true>(param, grad, buf)
                                 : apply<true, false>(param, grad, buf);
    return weightDecay != 0.0f ? apply<false, true>(param, grad, buf)
                               : apply<false, false>(param, grad, buf);
  }
};

/// One element of torch.optim.AdamW (torch 1.13's single-tensor path);
/// returns the new parameter and updates the moments in place.
struct AdamwStep {
  float decay; // 1 - lr * weightDecay
  float beta1;
  float beta2;
  float eps;
  float stepSize; // lr / (1 - beta1^t)
  float bc2Sqrt;  // sqrt(1 - beta2^t)

  /// The per-step scalars, computed in double as PyTorch's Python code does.
  static AdamwStep make(float lr, float beta1, float beta2, float eps,
                        float weightDecay, int64_t step) {
    double t = static_cast<double>(step + 1);
    double bc1 = 1.0 - std::pow(static_cast<double>(beta1), t);
    double bc2 = 1.0 - std::pow(static_cast<double>(beta2), t);
    AdamwStep s;
    s.decay = static_cast<float>(1.0 - double(lr) * double(weightDecay));
    s.beta1 = beta1;
    s.beta2 = beta2;
    s.eps = eps;
    s.stepSize = static_cast<float>(double(lr) / bc1);
    s.bc2Sqrt = static_cast<float>(std::sqrt(bc2));
    return s;
  }

  CLEAVE_HD float operator()(float param, float grad, float &m,
                             float &v) const {
    param = param * decay;
    m = m * beta1 + (1.0f - beta1) * grad;
    v = v * beta2 + (1.0f - beta2) * grad * grad;
    float denom = std::sqrt(v) / bc2Sqrt + eps;
    return param + (-stepSize * m) / denom;
  }
};

/// One element of the ONNX training Momentum operator
/// (ai.onnx.preview.training): returns the new parameter, writes the new
/// velocity.
struct OnnxMomentumStep {
  float lr, alpha, beta, normCoefficient;
  bool nesterov;
  int64_t step;

  CLEAVE_HD float operator()(float x, float g, float v, float &newV) const {
    float regularized = normCoefficient * x + g;
    float betaAdjusted = step > 0 ? beta : 1.0f;
    newV = alpha * v + betaAdjusted * regularized;
    return nesterov ? x - lr * (regularized + alpha * newV) : x - lr * newV;
  }
};

/// One element of the ONNX training Adam operator.
struct OnnxAdamStep {
  float lr, alpha, beta, epsilon, normCoefficient, normCoefficientPost;
  int64_t step;

  CLEAVE_HD float operator()(float x, float g, float v, float h, float &newV,
                             float &newH) const {
    float regularized = normCoefficient * x + g;
    newV = alpha * v + (1.0f - alpha) * regularized;
    newH = beta * h + (1.0f - beta) * regularized * regularized;
    float hSqrt = sqrtf(newH) + epsilon;
    float adjusted =
        step > 0 ? lr * sqrtf(1.0f - powf(beta, static_cast<float>(step))) /
                       (1.0f - powf(alpha, static_cast<float>(step)))
                 : lr;
    float updated = x - adjusted * newV / hSqrt;
    return (1.0f - normCoefficientPost) * updated;
  }
};

/// One element of the ONNX training Adagrad operator.
struct OnnxAdagradStep {
  float lr, decayFactor, epsilon, normCoefficient;
  int64_t step;

  CLEAVE_HD float operator()(float x, float g, float h, float &newH) const {
    float adjusted = lr / (1.0f + static_cast<float>(step) * decayFactor);
    float regularized = normCoefficient * x + g;
    newH = h + regularized * regularized;
    return x - adjusted * regularized / (sqrtf(newH) + epsilon);
  }
};

} // namespace cleave::body

#endif // CLEAVE_RUNTIME_ELEMENTWISEBODIES_H
