//===- BlasPackingProbe.cpp - measures OpenBLAS's packing blocking --------===//

#include "BlasPackingProbe.h"

#include "runtime/BlasPacking.h"
#include "runtime/Kernels.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace cleave::probe {

namespace {

/// This process's anonymous resident bytes (/proc/self/status RssAnon).
int64_t residentAnonymousBytes() {
  std::FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, "RssAnon: %lld kB", &kb) == 1)
      break;
  std::fclose(status);
  return kb < 0 ? -1 : kb * 1024;
}

/// The anonymous pages one product (as the runtime's gemm makes it, on
/// one thread) touches beyond its operands, in a child process of its own
/// so that no earlier product's pages count; -1 where it cannot tell.
int64_t packingOf(bool transA, bool transB, int64_t m, int64_t n, int64_t k) {
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  pid_t child = fork();
  if (child < 0)
    return -1;
  if (child == 0) {
    close(fds[0]);
    omp_set_num_threads(1);
    // Operands and result touched first: only OpenBLAS's pages remain.
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n, 0.0f);
    int64_t before = residentAnonymousBytes();
    rt::gemm(transA, transB, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
    int64_t after = residentAnonymousBytes();
    int64_t rise = before < 0 || after < 0 ? -1 : after - before;
    ssize_t written = write(fds[1], &rise, sizeof rise);
    _exit(written == sizeof rise ? 0 : 1);
  }
  close(fds[1]);
  int64_t rise = -1;
  if (read(fds[0], &rise, sizeof rise) != sizeof rise)
    rise = -1;
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? rise : -1;
}

int64_t pages(int64_t floats) {
  return rt::detail::blasPagesBytes(floats * int64_t(sizeof(float)));
}

/// The value in [1, most] whose `model` is nearest `measured`; of equals,
/// the one with most factors of two (OpenBLAS's blocks are multiples of
/// its unroll).
template <typename Model>
int64_t fit(int64_t most, int64_t measured, Model model) {
  int64_t best = 0, bestError = INT64_MAX;
  auto twos = [](int64_t v) { return __builtin_ctzll(uint64_t(v)); };
  for (int64_t v = 1; v <= most; ++v) {
    int64_t error = std::llabs(model(v) - measured);
    if (error < bestError || (error == bestError && twos(v) > twos(best))) {
      best = v;
      bestError = error;
    }
  }
  return best;
}

/// Whether the kernel backs anonymous mappings with 2 MiB pages unasked
/// (/sys/kernel/mm/transparent_hugepage/enabled: "[always]").
bool hugePagesAlways() {
  std::FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f)
    return false;
  char text[128] = {};
  size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  return std::strstr(std::string(text, n).c_str(), "[always]") != nullptr;
}

int fail(const char *why) {
  std::printf("{\"error\": \"%s\"}\n", why);
  return 0;
}

} // namespace

int runBlasPackingProbe() {
  // Panels of all rows and of the depth (n and k at least twice any block
  // up to 2048), beside 64 and 576 columns; then one panel of 64 rows.
  constexpr int64_t kLarge = 4096, kFew = 64, kMore = 576;
  int64_t wide = packingOf(false, false, kFew, kLarge, kLarge);
  int64_t wider = packingOf(false, false, kMore, kLarge, kLarge);
  int64_t narrow = packingOf(false, false, kFew, kFew, kLarge);
  if (wide <= 0 || wider <= wide || narrow <= 0)
    return fail("the products packed nothing that grows with their shape");
  rt::BlasBlocking b;
  b.panelDepth = fit(2048, wider - wide, [&](int64_t q) {
    return pages(q * kMore) - pages(q * kFew);
  });
  b.panelRows = fit(2048, wide, [&](int64_t p) {
    return pages(p * b.panelDepth) + pages(b.panelDepth * kFew);
  });
  b.narrowColumns = fit(kFew, narrow, [&](int64_t w) {
    return pages(kFew * b.panelDepth) + pages(b.panelDepth * w);
  });
  // The largest cube that packs nothing (a page of slack for the stack).
  int64_t lo = 0, hi = 512;
  while (lo < hi) {
    int64_t side = (lo + hi + 1) / 2;
    int64_t rise = packingOf(false, false, side, side, side);
    if (rise < 0)
      return fail("a product's pages could not be measured");
    if (rise <= rt::detail::kBlasPageBytes)
      lo = side;
    else
      hi = side - 1;
  }
  b.smallProduct = lo * lo * lo;
  // Shapes the fit did not see: blocks halved, transposed operands, small
  // transposed products. Each within two pages, or the model is not this
  // BLAS's.
  struct Check {
    bool transA, transB;
    int64_t m, n, k;
  };
  const Check checks[] = {{false, false, 200, 700, 700},
                          {false, true, 64, 64, 64},
                          {true, false, 80, 80, 80},
                          {true, false, 96, 1000, 300},
                          {false, true, 48, 300, 1000}};
  std::string json;
  bool agree = true;
  for (const Check &c : checks) {
    int64_t predicted =
        rt::blasPackingBytes(b, c.transA, c.transB, c.m, c.n, c.k);
    int64_t measured = packingOf(c.transA, c.transB, c.m, c.n, c.k);
    agree = agree && measured >= 0 &&
            std::llabs(predicted - measured) <= 2 * rt::detail::kBlasPageBytes;
    json += (json.empty() ? "[" : ", [") + std::to_string(predicted) + ", " +
            std::to_string(measured) + "]";
  }
  if (!agree) {
    std::printf("{\"error\": \"OpenBLAS's packing does not follow the model "
                "(predicted, measured bytes: %s)%s\"}\n",
                json.c_str(),
                hugePagesAlways() ? "; transparent huge pages are always on, "
                                    "and OpenBLAS's buffer takes them"
                                  : "");
    return 0;
  }
  std::printf("{\"panel_rows\": %lld, \"panel_depth\": %lld, "
              "\"narrow_columns\": %lld, \"small_product\": %lld, "
              "\"checks\": [%s]}\n",
              (long long)b.panelRows, (long long)b.panelDepth,
              (long long)b.narrowColumns, (long long)b.smallProduct,
              json.c_str());
  return 0;
}

} // namespace cleave::probe
