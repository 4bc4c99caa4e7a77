// The FBF experiments' machinery (FBF paper, seed 001, section VI): workloads
// on simulated time, false-positive measurement of a tally::
// forgetful_bloom_filter, and the counter-with-retries simulation. The
// experiments in fbf_experiments.cpp choose the parameters and write the
// results; the tests in tests/experiments/ call these functions with small
// ones.
//
// Nothing here re-implements the FBF: inserts, refreshes, adaptation, the
// optimized and simple checks and Equation 3 are fbf/'s. Two readings of the
// filters are added for comparison only, both through the FBF's public
// accessors:
//  - check_kind::prototype, Algorithm 2 exactly as the paper prints it, which
//    checks the oldest past filter alone only when N = 1 (see
//    prototype_contains);
//  - bitwise_fpp, the false-positive probability of the FBF's actual bits for
//    a uniformly hashed probe, free of sampling noise, so FPPs far below
//    1/probes can still be compared.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/expected.hpp"
#include "fbf/forgetful_bloom_filter.hpp"

namespace tally::experiments {

/// Seconds of simulated time as FBF time (millisecond resolution).
fbf_time at_seconds(double s) noexcept;
double to_seconds(fbf_time t) noexcept;

/// An FBF configuration of the paper's experiments: m bits, k hashes,
/// N past filters, refresh period t, no adaptation. The retry timeout is 0:
/// the paper's FBF has no such parameter (its window is whatever (N+1)t is),
/// and with 0 Tally's refresh postponement never acts, so the refresh
/// cascade is exactly the paper's (Sec. III-C).
fbf_config paper_fbf(std::uint64_t m, unsigned k, std::size_t past_filters,
                     fbf_duration t);

/// The i-th inserted id and the i-th absent probe of a run: two disjoint
/// families of element hashes (hash_pair is injective in its second word), so
/// a probe is never an inserted element and every hit is a false positive.
std::uint64_t inserted_id(std::uint64_t salt, std::uint64_t i) noexcept;
std::uint64_t absent_id(std::uint64_t salt, std::uint64_t i) noexcept;

/// Which membership check is measured.
enum class check_kind : std::uint8_t {
  optimized, // Tally's contains(): Algorithm 2 as Equation 3 models it
  simple,    // contains_in_any_filter(): Sec. III-A, any filter
  prototype, // Algorithm 2 as printed (prototype_contains)
};

/// Algorithm 2 exactly as printed in the paper: future; present and
/// pastNewest; then, only if pastOldest > pastNewest (N >= 2), the adjacent
/// past pairs; and only otherwise (N = 1) the oldest filter alone. For N >= 2
/// the oldest filter is never checked alone, so an id whose newer filter was
/// already dropped is forgotten one period early (a false negative) and
/// Equation 3's phi_0 term is missing from the FPP. For comparison only; it
/// ignores born-past marks (the paper has none).
bool prototype_contains(const forgetful_bloom_filter& f,
                        std::uint64_t element_hash) noexcept;

bool check(const forgetful_bloom_filter& f, check_kind kind,
           std::uint64_t element_hash) noexcept;

/// The false-positive probability of f's current bits under `kind`, for a
/// probe whose k positions are independent and uniform on [0, m): the exact
/// expectation of what sampling with absent ids estimates, without the
/// sampling noise. Reads the bits through bloom_filter::contains with
/// single-position probes. NaN when the check has more than 20 parts (an FBF
/// of more than 20 filters under the simple check, or 24 filters under the
/// optimized one): the exact sum is exponential in the number of parts.
double bitwise_fpp(const forgetful_bloom_filter& f, check_kind kind);

/// Counts hits of `probes` absent ids (absent_id(salt, i)) under `kind`.
std::uint64_t count_false_positives(const forgetful_bloom_filter& f,
                                    check_kind kind, std::uint64_t probes,
                                    std::uint64_t salt);

/// One FPP reading of one check, averaged over repetitions.
struct fpp_reading {
  std::uint64_t hits = 0;
  std::uint64_t probes = 0;
  double bitwise = 0; // mean bitwise_fpp
  /// hits / probes: the paper's empirical FPP.
  double measured() const noexcept {
    return probes ? static_cast<double>(hits) / static_cast<double>(probes)
                  : 0.0;
  }
};

/// The FBF's false positives at one moment of a workload.
struct fpp_point {
  double time = 0; // seconds since the workload started
  double x = 0;    // what the figure plots it against (ops/s, elements, bits)
  fpp_reading optimized, simple, prototype;
  double model = 0; // mean Equation 3 (fbf_false_positive_probability)
  /// Mean shared-period model (forgetful_bloom_filter::current_fpp).
  double corrected = 0;
  /// Elements per filter (future, present, pasts) in the first repetition.
  std::vector<std::uint64_t> loads;
};

/// Bit set of check_kinds to measure (sampling every check costs time).
struct check_set {
  bool optimized = true;
  bool simple = false;
  bool prototype = false;
};

/// A workload replayed against fresh FBFs: ids arrive at `arrivals` (seconds
/// since the workload start, ascending) and the FPP is read at `readings`
/// (seconds, ascending; x is copied into the result).
struct workload {
  std::vector<double> arrivals;
  std::vector<std::pair<double, double>> readings; // (time, x)
};

struct replay_params {
  fbf_config fbf;
  std::uint64_t probes = 200'000;
  unsigned repetitions = 1;
  /// Repetition r starts the workload at phase (r + u_r) / repetitions of a
  /// refresh period after the FBF's creation (u_r uniform in [0, 1)), so the
  /// average is over the refresh phase instead of one arbitrary alignment.
  /// false: every repetition starts at the FBF's creation.
  bool random_phase = false;
  check_set checks;
  std::uint64_t seed = 1;
};

/// Replays `w` on params.repetitions fresh FBFs (new ids and probes each)
/// and returns one point per reading. Errors: the FBF's make()/advance().
expected<std::vector<fpp_point>> replay(const workload& w,
                                        const replay_params& params);

/// `count` arrivals spread evenly over [0, span) seconds.
std::vector<double> even_arrivals(std::uint64_t count, double span);

/// A workload whose rate grows from r0 to r1 ops/s over `total` arrivals,
/// linearly or exponentially; closed forms, so arrival j is exactly where the
/// cumulative count reaches j + 1.
struct ramp {
  enum class shape : std::uint8_t { linear, exponential };
  shape kind = shape::linear;
  double r0 = 0;             // ops/s at time 0 (> 0 for exponential)
  double r1 = 100;           // ops/s at the end
  std::uint64_t total = 1000;

  double duration() const;
  double rate_at(double t) const;
  /// When the rate is r (r0 <= r <= r1).
  double time_at_rate(double r) const;
  /// Arrival time of element j (0-based).
  double arrival(std::uint64_t j) const;
  std::vector<double> arrivals() const;
};

/// A rate profile through (time, ops/s) knots, linear in between, constant
/// after the last knot. Arrivals by integrating the rate per millisecond.
std::vector<double> profile_arrivals(
    const std::vector<std::pair<double, double>>& knots, double duration);
double profile_rate(const std::vector<std::pair<double, double>>& knots,
                    double t);

/// Algorithm 3 at work (Fig. 13): one adaptive FBF, a rate profile, and a
/// reading every `sample_every` seconds.
struct adaptive_params {
  fbf_config fbf; // adaptive = true
  std::vector<std::pair<double, double>> profile;
  double duration = 60;
  double sample_every = 0.5;
  std::uint64_t probes = 200'000;
  /// Ids inserted less than this many seconds before a reading are checked
  /// with the printed Algorithm 2 (adaptive_point::prototype_forgotten).
  double recent = 22;
  std::uint64_t seed = 1;
};

struct adaptive_point {
  double time = 0;
  double rate = 0; // offered ops/s at this time
  fpp_reading optimized;
  /// The same FBF read with the printed Algorithm 2 (check_kind::prototype).
  fpp_reading prototype;
  /// Inserted ids younger than adaptive_params::recent that the printed
  /// Algorithm 2 no longer finds (Tally's check finds every one): the
  /// duplicates a prototype FBF would let through.
  std::uint64_t prototype_forgotten = 0;
  double model = 0;     // Equation 3 as the paper prints it
  double corrected = 0; // current_fpp(): the shared-period model
  /// predicted_fpp_after_refresh(next refresh): what the adaptation also
  /// acts on.
  double predicted = 0;
  std::size_t filters = 0;
  double period = 0; // refresh period t in seconds
  std::uint64_t refreshes = 0; // refreshes so far
  /// Elements per filter (future, present, pasts).
  std::vector<std::uint64_t> loads;
};

expected<std::vector<adaptive_point>> run_adaptive(const adaptive_params& p);

/// Fig. 14: a client stream of increments, every `retry_every`-th retried
/// once with the same op id, against a pn_counter gated by an FBF and a
/// pn_counter without one.
struct counter_params {
  std::uint64_t operations = 3000; // distinct increments
  double rate = 10;                // distinct increments per second
  std::uint64_t clients = 10;
  std::uint64_t retry_every = 10;  // 0: no retries
  /// A retry follows its operation after a delay uniform in [min, max]
  /// seconds, inside the client's retry timeout (fbf.retry_timeout).
  double retry_delay_min = 0.5;
  double retry_delay_max = 4.0;
  fbf_config fbf;
  double sample_every = 1;
  std::uint64_t seed = 1;
};

struct counter_sample {
  double time = 0;
  std::int64_t expected = 0; // distinct increments issued so far
  std::int64_t with_fbf = 0;
  std::int64_t without_fbf = 0;
};

struct counter_result {
  std::vector<counter_sample> samples; // the last one is the final state
  std::uint64_t requests = 0;          // increments sent, retries included
  /// Distinct increments the FBF wrongly dismissed as retries (its false
  /// positives): the under-count.
  std::uint64_t dismissed_distinct = 0;
  /// Retries the FBF let through: the over-count (0 while the window covers
  /// the retry delay).
  std::uint64_t applied_retries = 0;
};

expected<counter_result> run_counter(const counter_params& p);

} // namespace tally::experiments
