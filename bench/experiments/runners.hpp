// The experiments' entry points, one per `tally-bench experiment <name>`
// (registry.cpp lists them). Each writes its CSV and SVG files into
// opts.out_dir and prints its table; docs/EXPERIMENTS.md explains each.
#pragma once

#include "bench/experiments/experiments.hpp"

namespace tally::experiments {

// FBF paper (seed 001), section VI: fbf_experiments.cpp.
status run_fbf_membership(const options& opts); // Fig. 8
status run_fbf_model(const options& opts);      // Figs. 9 and 10
status run_fbf_refresh(const options& opts);    // Fig. 11
status run_fbf_filters(const options& opts);    // Fig. 12
status run_fbf_adaptive(const options& opts);   // Fig. 13
status run_fbf_counter(const options& opts);    // Fig. 14

// FBF paper (seed 001), Sec. VI-D, on real tallyd nodes: node_experiments.cpp.
status run_fbf_failover(const options& opts); // Fig. 14, a node killed
status run_fbf_latency(const options& opts);  // Fig. 15

// Bloom clock paper (seed 002), sections 5 and 6: bloom_experiments.cpp.
status run_bloom_table1(const options& opts);
status run_bloom_table2(const options& opts);
status run_bloom_table3(const options& opts);
status run_bloom_table4(const options& opts);
status run_bloom_table5(const options& opts);
status run_bloom_table6(const options& opts);
status run_bloom_figures(const options& opts); // Figs. 2-4
status run_bloom_model(const options& opts);   // scheduling-model sensitivity
status run_bloom_figure5(const options& opts); // Fig. 5 (section 7.2)
status run_bloom_broadcast(const options& opts); // broadcast (section 7.2)

// Bloom clock paper (seed 002), Prop. 1 and Eqs. 2, 3, 7, in Tally's replicas
// on real tallyd nodes: replication_experiments.cpp.
status run_bloom_replication(const options& opts);

} // namespace tally::experiments
