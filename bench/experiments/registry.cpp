#include <cstdio>

#include "bench/experiments/experiments.hpp"
#include "bench/experiments/runners.hpp"

namespace tally::experiments {

const std::vector<experiment>& registry() {
  static const std::vector<experiment> all = {
      {"fbf-membership", "FBF Fig. 8: optimized vs simple membership check",
       run_fbf_membership},
      {"fbf-model", "FBF Figs. 9-10: Equation 3 vs measured FPP",
       run_fbf_model},
      {"fbf-refresh", "FBF Fig. 11: refresh period 5/3/2/1 s, rising load",
       run_fbf_refresh},
      {"fbf-filters", "FBF Fig. 12: 24/12/6/3 filters, rising load",
       run_fbf_filters},
      {"fbf-adaptive", "FBF Fig. 13: Algorithm 3 under a varying load",
       run_fbf_adaptive},
      {"fbf-counter", "FBF Fig. 14: counter with vs without FBF under retries",
       run_fbf_counter},
      {"fbf-failover",
       "FBF Fig. 14 failover: 3 tallyd nodes (n_val 3), one killed, retries",
       run_fbf_failover},
      {"fbf-latency",
       "FBF Fig. 15: latency of 50-update counter batches, op ids on vs off",
       run_fbf_latency},
      {"bloom-table1", "Bloom clock Table 1: metrics vs n (100..700)",
       run_bloom_table1},
      {"bloom-table2", "Bloom clock Table 2: metrics vs pr_i",
       run_bloom_table2},
      {"bloom-table3", "Bloom clock Table 3: metrics vs k", run_bloom_table3},
      {"bloom-table4", "Bloom clock Table 4: metrics vs m", run_bloom_table4},
      {"bloom-table5", "Bloom clock Table 5: Bloom vs scalar clock",
       run_bloom_table5},
      {"bloom-table6", "Bloom clock Table 6: client-server star",
       run_bloom_table6},
      {"bloom-figures", "Bloom clock Figs. 2-4: pr_p and pr_fp along GSN",
       run_bloom_figures},
      {"bloom-figure5",
       "Bloom clock Fig. 5: metrics vs causality spread alpha",
       run_bloom_figure5},
      {"bloom-broadcast",
       "Bloom clock section 7.2: broadcast execution (alpha, precision)",
       run_bloom_broadcast},
      {"bloom-model",
       "Bloom clock: the scheduling model's variants vs the paper (why "
       "precision is lower)",
       run_bloom_model},
      {"bloom-replication",
       "Bloom clock in the replicas' dependency check: 3 tallyd nodes (n_val 3), "
       "kill -9 and catch-up; counts vs Eqs. 2, 3, 7",
       run_bloom_replication},
  };
  return all;
}

const experiment* find_experiment(std::string_view name) {
  for (const experiment& e : registry())
    if (e.name == name)
      return &e;
  return nullptr;
}

status run_all(const options& opts) {
  for (const experiment& e : registry()) {
    std::printf("\n### %.*s\n", static_cast<int>(e.name.size()), e.name.data());
    std::fflush(stdout);
    if (auto st = e.run(opts); !st)
      return make_error(st.err().code(), std::string(e.name) + ": "
                                             + st.err().message());
  }
  return {};
}

} // namespace tally::experiments
