// A tiny benchmark harness shared by Tally's benchmark binaries (STYLE.md,
// habit 10): named workloads, a fixed-format line per result, the median and
// spread over several runs, and a warning when the binary is not optimized.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifndef TALLY_BUILD_TYPE
#define TALLY_BUILD_TYPE "unknown"
#endif

namespace tally::bench {

/// Keeps `value` alive so the optimizer cannot delete the work producing it.
template <class T>
inline void do_not_optimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

inline double median(std::vector<double> xs) {
  if (xs.empty())
    return 0.0;
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
}

struct summary {
  double median = 0;
  double min = 0;
  double max = 0;
};

inline summary summarize(const std::vector<double>& xs) {
  summary s;
  s.median = median(xs);
  s.min = *std::min_element(xs.begin(), xs.end());
  s.max = *std::max_element(xs.begin(), xs.end());
  return s;
}

/// Prints a warning on stderr when built without optimization: numbers from
/// such a build are meaningless.
inline void warn_if_unoptimized() {
  if (std::strcmp(TALLY_BUILD_TYPE, "Release") != 0
      && std::strcmp(TALLY_BUILD_TYPE, "RelWithDebInfo") != 0)
    std::fprintf(stderr,
                 "WARNING: built as '%s', not Release: these numbers mean "
                 "nothing. Rebuild with -DCMAKE_BUILD_TYPE=Release.\n",
                 TALLY_BUILD_TYPE);
}

/// Times `body(iters)` `runs` times and returns nanoseconds per iteration of
/// each run. `body` must do `iters` operations.
inline std::vector<double>
time_runs(int runs, std::uint64_t iters,
          const std::function<void(std::uint64_t)>& body) {
  using clock = std::chrono::steady_clock;
  std::vector<double> ns_per_op;
  body(std::max<std::uint64_t>(iters / 10, 1)); // warm caches and branch predictors
  for (int r = 0; r < runs; ++r) {
    auto t0 = clock::now();
    body(iters);
    auto t1 = clock::now();
    ns_per_op.push_back(
      std::chrono::duration<double, std::nano>(t1 - t0).count()
      / static_cast<double>(iters));
  }
  return ns_per_op;
}

/// The options every benchmark binary shares: `--seed S`, `--runs N` (at
/// least 1) and `--workload NAME` (run one workload). Returns true when `arg`
/// was one of them and stored `value` into `o` (fields seed, runs, only).
template <class Options>
bool take_common_option(const std::string& arg, const char* value, Options& o) {
  if (arg == "--seed")
    o.seed = std::strtoull(value, nullptr, 10);
  else if (arg == "--runs")
    o.runs = std::max(1, std::atoi(value));
  else if (arg == "--workload")
    o.only = value;
  else
    return false;
  return true;
}

/// One result line: "<name> <median> ns/op (min <min>, max <max>, <runs> runs)"
inline void print_line(const std::string& name, const summary& s, int runs,
                       const char* unit = "ns/op") {
  std::printf("%-40s %10.1f %s  (min %.1f, max %.1f, %d runs)\n", name.c_str(),
              s.median, unit, s.min, s.max, runs);
  std::fflush(stdout);
}

} // namespace tally::bench
