// A copy's check that it has applied everything a replicated batch depends
// on (docs/REPLICATION.md, "Dependency check"): the Bloom clock first, the
// exact check (LSN positions and the prefix check) only when the Bloom
// clock cannot decide.
//
// The Bloom clock test is Proposition 1 of the Bloom clock paper (seed 002,
// section 3): "y -> z" is declared when B_z >= B_y cell-wise. Here y is the
// batch's dependency (the primary's last commit before the batch,
// replication_batch.hpp) and z is this copy's state (the Bloom timestamp of
// the last commit in its journal). Section 4, case 2: there are no false
// negatives, so B_z not >= B_y *proves* y is not applied here: the batch is
// refused at once, without the exact check. A positive may be false (case
// 4): it is confirmed by the exact check before anything is applied.
//
// The counters compare what happened with the paper's predictions for the
// same m, k and timestamps: pr_p of Equation 7 (Poisson form,
// clock/bloom_probability.hpp) for each check, summed into the expected
// false positives of Equation 2 (pr_fp = (1 - pr_p) pr_delta, over the
// positives) and Equation 3 (pr_fp = (1 - pr_p) pr_p, over every check),
// and into Equation 7's expected positives among the checks whose y was
// missing (those positives are the false ones). pr_p costs about 20 us at
// m = 64 (B^sum 6 * 10^4, this machine): it is computed for every negative
// and refused positive, and for one confirmed positive in
// `predict_one_in`, weighted by that number (an unbiased estimate of the
// sums over the confirmed positives; in order, pr_p of two equal clocks is
// below 1e-20 once a few hundred commits are ticked).
//
// Plain C++: no actors, no I/O. The exact checks are callbacks, run only
// when needed. One owner per dependency_check (a partition); the node-wide
// dependency_tally may be shared between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "clock/bloom_clock.hpp"
#include "journal/record.hpp"
#include "replication/replication_batch.hpp"

namespace tally {

/// What a copy does with a batch: apply it (everything below its first
/// LSN is here and the same as the primary's), ask for what it misses (the
/// batch starts beyond this journal's end), or report a divergence (this
/// journal holds other records than the primary's below the batch).
enum class dependency_verdict : std::uint8_t { apply = 0, gap = 1, diverged = 2 };
const char* to_string(dependency_verdict v) noexcept;

/// What the checks found, added up. Every batch is exactly one of: checked
/// by the Bloom clock (`checks`) or not (`unchecked`).
struct dependency_counts {
  /// Batches tested with the Bloom clock.
  std::uint64_t checks = 0;
  /// Batches checked exactly only: no dependency sent (unknown to the
  /// primary, or an older sender) or a clock of another m or k.
  std::uint64_t unchecked = 0;
  /// Bloom negatives (B_z not >= B_y): y is missing here (case 2).
  std::uint64_t negatives = 0;
  /// Negatives refused as a gap without the exact check: the exact checks
  /// the Bloom clock saved.
  std::uint64_t saved = 0;
  /// Negatives where this journal reaches the batch's first LSN: its
  /// records there are not the primary's. The exact prefix check runs
  /// (to audit the clock); the answer is a divergence either way.
  std::uint64_t negatives_diverged = 0;
  /// Of those, the exact prefix check found the record before the batch
  /// to be the primary's: the histories differ further back than the one
  /// record it compares (or a clock fell out of step with its journal).
  /// Case 2 says this never happens for one history.
  std::uint64_t contradicted = 0;
  /// Bloom positives the exact check confirmed (true positives).
  std::uint64_t confirmed = 0;
  /// Bloom positives the exact check refused: the brief's "false
  /// positives" (the Bloom clock said "maybe applied", the exact check no).
  std::uint64_t false_positives = 0;
  /// Of those, the ones where y itself is not here: false positives of the
  /// paper's kind (y -/-> z and B_z >= B_y, section 4 case 4). The others
  /// miss only records that tick no clock (updates, prepares, aborts) or
  /// records after y: no clock over commits can see them.
  std::uint64_t fp_commit_missing = 0;
  /// Checks whose y was missing here: the negatives and fp_commit_missing.
  std::uint64_t missing = 0;
  /// Equation 2's expected false positives: the sum over positives of
  /// 1 - pr_p.
  double eq2_expected_fp = 0;
  /// Equation 3's expected false positives: the sum over every check of
  /// (1 - pr_p) pr_p.
  double eq3_expected_fp = 0;
  /// Equation 7's expected positives among the checks whose y was missing
  /// (the sum of their pr_p): what fp_commit_missing should be near.
  double eq7_expected_fp = 0;
  /// The Bloom clocks' size and hashes (0 before the first check).
  std::uint32_t m = 0;
  std::uint32_t k = 0;

  dependency_counts& operator+=(const dependency_counts& o) noexcept;
};

/// One line: "checks N | unchecked N | negatives N (saved N, diverged N,
/// contradicted N) | confirmed N | false positives N (y missing N) |
/// expected false positives: Eq. 2 X, Eq. 3 X, Eq. 7 X of N missing |
/// m M, k K".
std::string describe(const dependency_counts& c);

/// The counters back from a describe() line (or from a text holding one,
/// e.g. `cluster status`); nullopt when there is none.
std::optional<dependency_counts> parse_dependency_counts(std::string_view text);

/// The sum over a node's copies; safe between threads.
class dependency_tally {
public:
  void add(const dependency_counts& c);
  dependency_counts total() const;

private:
  mutable std::mutex mu_;
  dependency_counts total_;
};

/// The exact checks, asked only when the Bloom clock cannot decide.
struct exact_checks {
  /// True when the record at first - 1 of this journal is the primary's
  /// (the prefix check); called only when first <= this journal's end.
  std::function<bool()> prefix_matches;
  /// True when this journal holds the commit of `tx` at LSN `at` (or has
  /// folded `at`: then it held it). Only to classify a refused positive;
  /// may be empty (a refused positive then counts as y missing only when
  /// `at` is at or beyond this journal's end).
  std::function<bool(lsn at, const tx_id& tx)> holds_commit;
};

class dependency_check {
public:
  /// `sink`: where every check is also added (the node's tally); may be
  /// null. `predict_one_in` (>= 1): pr_p is computed for one confirmed
  /// positive in this many (see above); 1: for every check.
  explicit dependency_check(std::shared_ptr<dependency_tally> sink = nullptr,
                            std::uint32_t predict_one_in = 16)
      : sink_(std::move(sink)), predict_one_in_(predict_one_in == 0 ? 1 : predict_one_in) {}

  /// Decides what to do with `b` at a copy whose journal ends at `end`
  /// (every LSN below it is here) and whose Bloom clock, the timestamp of
  /// its journal's last commit, is `mine`:
  ///   no usable dependency  -> the exact check alone;
  ///   B_mine not >= B_deps  -> gap if b.first > end (no exact check), else
  ///                            diverged (the prefix check runs only to
  ///                            audit the clock);
  ///   B_mine >= B_deps      -> the exact check: gap if b.first > end,
  ///                            diverged if the prefix does not match,
  ///                            else apply.
  /// The batch's own content (an empty probe below `end`, records that do
  /// not fit) is the caller's to check after an `apply`.
  dependency_verdict check(const bloom_clock& mine, lsn end, const replication_batch& b,
                           const exact_checks& exact);

  const dependency_counts& counts() const noexcept { return counts_; }

private:
  void count(const dependency_counts& delta);

  dependency_counts counts_;
  std::shared_ptr<dependency_tally> sink_;
  std::uint32_t predict_one_in_ = 16;
  std::uint64_t confirmed_seen_ = 0;
};

} // namespace tally
