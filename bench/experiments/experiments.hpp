// The paper-reproduction experiments of `tally-bench experiment` (issue:
// reproduce the figures and tables of the FBF paper, seed 001, section VI, and
// of the Bloom clock paper, seed 002, sections 5-6, with Tally's own fbf/ and
// clock/ structures). Results, commands and the comparison with the papers:
// docs/EXPERIMENTS.md.
//
// Every simulated experiment is deterministic: it draws from seeded
// generators (experiments/rng.hpp) and runs on simulated time (the FBF takes
// time as a parameter); it never sleeps and never reads the wall clock. Two
// measure real tallyd nodes instead (fbf-latency and fbf-failover, FBF paper
// Figs. 15 and 14: node_runs.hpp). It writes
// <out>/<name>*.csv and <out>/<name>*.svg and prints a short table on stdout;
// long ones print progress lines on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.hpp"

namespace tally::experiments {

/// Which Algorithm 3 fbf-adaptive (Fig. 13) runs (fbf_adaptation).
enum class adapt_version : std::uint8_t {
  tally, // Algorithm 3 with Tally's five deviations (docs/FBF.md, "Adaptation")
  paper, // Algorithm 3 exactly as printed (FBF paper Sec. III-E)
};

/// Where and how to run.
struct options {
  /// Output folder for the CSV and SVG files; created if missing.
  std::string out_dir = "bench-results/experiments";
  /// Master seed; every run of every experiment derives its own from it.
  std::uint64_t seed = 1;
  /// Small parameters (seconds in total) for smoke runs; the numbers are
  /// noisier and the largest configurations are left out.
  bool quick = false;
  /// Progress lines on stderr.
  bool progress = true;
  /// fbf-adaptive's controller: `--adapt tally|paper`.
  adapt_version adapt = adapt_version::tally;
  /// The tallyd binary the experiments against real nodes start
  /// (fbf-latency, fbf-failover): `--tallyd PATH`; empty: the tallyd next to
  /// the running binary.
  std::string tallyd;
};

struct experiment {
  std::string_view name;
  /// One line for `tally-bench experiment --help`.
  std::string_view summary;
  status (*run)(const options&);
};

/// Every experiment, in the order `experiment all` runs them.
const std::vector<experiment>& registry();

/// The experiment called `name`, or nullptr.
const experiment* find_experiment(std::string_view name);

/// Runs every experiment in registry order; stops at the first error.
status run_all(const options& opts);

} // namespace tally::experiments
