// `tally-bench experiment bloom-replication`: the Bloom clock dependency
// check of Tally's replicas on real tallyd nodes (replication_runs.hpp),
// its counts next to what the Bloom clock paper's equations predict for the
// same m, k and timestamps (seed 002: Equation 7's pr_p, summed as
// Equation 2's and Equation 3's expected false positives, and Equation 7's
// expected positives among the checks whose dependency was missing).
// docs/EXPERIMENTS.md, "bloom-replication", discusses the figures.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/experiments/output.hpp"
#include "bench/experiments/replication_runs.hpp"
#include "bench/experiments/runners.hpp"

namespace tally::experiments {

namespace {

std::string tallyd_or_next(const options& opts) {
  return opts.tallyd.empty() ? tallyd_next_to_this_binary() : opts.tallyd;
}

std::vector<cell_value> row_of(const dependency_counts& c) {
  auto i = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  return {i(c.checks),         i(c.unchecked), i(c.negatives),       i(c.saved),
          i(c.negatives_diverged), i(c.contradicted), i(c.confirmed), i(c.false_positives),
          i(c.fp_commit_missing), i(c.missing),  c.eq2_expected_fp,    c.eq3_expected_fp,
          c.eq7_expected_fp};
}

} // namespace

status run_bloom_replication(const options& opts) {
  bloom_replication_params p;
  p.cluster.tallyd = tallyd_or_next(opts);
  p.cluster.root = (std::filesystem::temp_directory_path()
                    / ("tally-bloom-replication-" + std::to_string(::getpid())))
                     .string();
  p.cluster.nodes = 3;
  p.cluster.n_val = 3;
  p.kills = opts.quick ? 1 : 3;
  p.down = std::chrono::milliseconds{opts.quick ? 3'000 : 10'000};
  p.between = std::chrono::milliseconds{opts.quick ? 2'000 : 3'000};
  p.seed = opts.seed;
  progress(opts, "bloom-replication",
           format("3 nodes, n_val 3, %u writers (%.0f%% of writes over two partitions); "
                  "%u kill -9 cycles, %lld s down each",
                  p.workers, 100 * p.two_partition_share, p.kills,
                  static_cast<long long>(p.down.count() / 1000)));
  auto r = run_replication_checks(p);
  if (!r)
    return r.err();
  result_table runs({{"node"},
                     {"run"},
                     {"until"},
                     {"checks"},
                     {"unchecked"},
                     {"negatives"},
                     {"saved"},
                     {"negatives_diverged"},
                     {"contradicted"},
                     {"confirmed"},
                     {"false_positives"},
                     {"fp_y_missing"},
                     {"y_missing"},
                     {"eq2_expected_fp", "%.4g"},
                     {"eq3_expected_fp", "%.3g"},
                     {"eq7_expected_fp", "%.3g"}});
  for (const auto& run : r->runs) {
    std::vector<cell_value> row{static_cast<std::int64_t>(run.node),
                                static_cast<std::int64_t>(run.run),
                                std::string{run.killed ? "kill -9" : "end"}};
    for (auto& v : row_of(run.counts))
      row.push_back(std::move(v));
    runs.add_row(std::move(row));
  }
  std::vector<cell_value> total{std::string{"all"}, std::string{"-"}, std::string{"-"}};
  for (auto& v : row_of(r->total))
    total.push_back(std::move(v));
  runs.add_row(std::move(total));
  print_table(format("bloom-replication: the replicas' dependency checks per node run "
                     "(m = %u, k = %u)",
                     r->total.m, r->total.k),
              runs);
  const auto& t = r->total;
  std::printf("writes: %llu acknowledged, %llu failed attempts (retried through another "
              "node), %.1f s of load; catch-up after each restart:",
              static_cast<unsigned long long>(r->acknowledged),
              static_cast<unsigned long long>(r->failed), r->load_s);
  for (double s : r->catch_up_s)
    std::printf(" %.2f s", s);
  std::printf("\n"
              "Bloom clock (Prop. 1) against the exact check, over %llu checks:\n"
              "  negatives (dependency missing, Sec. 4 case 2): %llu; decided without the "
              "exact check: %llu; contradicted by it: %llu\n"
              "  positives confirmed: %llu; refused by the exact check: %llu, of which the "
              "dependency's commit itself was missing (the paper's false positive): %llu\n"
              "paper's predictions from the same timestamps (Eq. 7's pr_p):\n"
              "  Eq. 2, sum over positives of 1 - pr_p: %.4g expected false positives\n"
              "  Eq. 3, sum over checks of (1 - pr_p) pr_p: %.3g\n"
              "  Eq. 7, sum of pr_p over the %llu checks whose dependency was missing: %.3g "
              "expected false positives, observed %llu\n",
              static_cast<unsigned long long>(t.checks),
              static_cast<unsigned long long>(t.negatives),
              static_cast<unsigned long long>(t.saved),
              static_cast<unsigned long long>(t.contradicted),
              static_cast<unsigned long long>(t.confirmed),
              static_cast<unsigned long long>(t.false_positives),
              static_cast<unsigned long long>(t.fp_commit_missing), t.eq2_expected_fp,
              t.eq3_expected_fp, static_cast<unsigned long long>(t.missing), t.eq7_expected_fp,
              static_cast<unsigned long long>(t.fp_commit_missing));
  return write_csv(opts, "bloom-replication", runs);
}

} // namespace tally::experiments
