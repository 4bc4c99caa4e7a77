// Runs a workload against one target (one thread per connection) and
// reports: the final table, the per-second CSV and SVG, the exactly-once
// check; `compare` alternates two targets (docs/BENCH.md).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench/load/driver.hpp"
#include "bench/load/histogram.hpp"
#include "bench/load/readback.hpp"
#include "bench/load/workload.hpp"

namespace tally::load {

/// One second of the measured phase.
struct second_stats {
  std::uint64_t ops[op_type_count] = {0, 0, 0};
  histogram latency[op_type_count];
  std::uint64_t errors = 0;
};

struct result {
  std::string target;
  std::string workload;
  bool failed = false;        // could not run (no connection, ...)
  std::string failure;
  double seconds = 0;         // measured wall time
  std::uint64_t ops[op_type_count] = {0, 0, 0}; // successful, measured
  histogram latency[op_type_count];             // ns, successful ops
  std::map<std::string, std::uint64_t> errors;  // by kind, measured
  std::uint64_t aborts = 0;   // errors of kind "aborted"
  std::uint64_t resent = 0;   // updates sent twice (--retry-rate)
  std::vector<second_stats> timeline;
  // Exactly-once check (all phases, warmup included); for sets and
  // registers the read-back check.
  bool verified = false;
  std::string verify_note;    // why not verified, or the read-back error
  std::int64_t expected_sum = 0;
  std::int64_t actual_sum = 0;
  std::uint64_t keys_off = 0; // keys whose value is not the expected one
  std::uint64_t unknown_updates = 0; // outcome unknown (connection lost)
  // Sets and registers (--type): the read-back check (bench/load/readback.hpp)
  // instead of sums; keys_off counts the keys it refuses.
  std::uint64_t keys_nonempty = 0; // keys holding elements (or a value) after
  std::uint64_t items_after = 0;   // elements of every set after (sets)
  std::string first_off;           // the first key refused, and why

  std::uint64_t total_ops() const { return ops[0] + ops[1] + ops[2]; }
  std::uint64_t total_errors() const;
  double throughput() const {
    return seconds > 0 ? static_cast<double>(total_ops()) / seconds : 0;
  }
  /// (actual - expected) / |expected|; 0 when both are 0.
  double relative_error() const;
  bool counters = true; // a counter workload (the sum check)
};

/// Runs `w` against `t`. `progress`: live line on stderr (when a terminal).
result run(const target& t, const workload& w);

/// Runs `w` against the nodes of one cluster: connection i talks to node
/// i mod n; the exactly-once read-back (before and after) goes through the
/// first node. One node: the same as run(t, w).
result run(const std::vector<target>& nodes, const workload& w);

void print_table(std::FILE* out, const result& r);

/// Per-second CSV: second,<type>_ops,<type>_p50_ms,<type>_p99_ms...,errors.
/// Empty on success, else the error.
std::string write_csv(const std::string& path, const result& r);
std::string csv_text(const result& r);

/// Throughput (left axis) and p50/p99 per type (right axis) over time.
std::string write_svg(const std::string& path, const result& r);

/// Named figures of a result, for compare: "throughput ops/s",
/// "read p50 ms", ... (only types that ran), "errors", "exactly-once rel err".
std::vector<std::pair<std::string, double>> figures(const result& r);

/// Median of each figure per target over the rounds and the ratio A/B.
void print_comparison(std::FILE* out, const target& a, const target& b,
                      const std::vector<result>& ra,
                      const std::vector<result>& rb);

} // namespace tally::load
