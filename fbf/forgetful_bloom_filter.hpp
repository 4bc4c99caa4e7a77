// The Forgetful Bloom Filter (FBF) of Subramanyam, Gupta, Leslie and Wang,
// "Idempotent Distributed Counters Using a Forgetful Bloom Filter" (seed
// 001): a moving window of recently seen operation ids. Tally keeps one per
// bucket in the partition actor and gates every counter update carrying an id
// <client id, sequence number> through insert() (DESIGN.md, "Exactly-once
// counters (FBF)"; docs/FBF.md).
//
// Layout (paper Sec. III-B, Fig. 1), index 0 first:
//   future, present, past_1 (newest) .. past_N (oldest) [, born-past ...]
// all with the same m and k. Inserts go to future and present (Algorithm 1);
// a refresh every t drops the oldest filter and shifts the rest (Sec. III-C);
// the membership check follows Algorithm 2; adaptive resizing Algorithm 3.
//
// Time is passed in, never read: advance(now) performs every refresh and
// adaptation due up to `now`, in time order. With the same calls the FBF
// reaches the same state on every node and every run.
//
// Not thread-safe: one owner (the partition actor) calls everything.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/expected.hpp"
#include "fbf/bloom_filter.hpp"
#include "fbf/fpp_model.hpp"

namespace tally {

/// FBF time: milliseconds since an arbitrary epoch (the owner's steady clock,
/// or a test's simulated one). Only differences matter.
using fbf_duration = std::chrono::milliseconds;
using fbf_time = std::chrono::time_point<std::chrono::steady_clock, fbf_duration>;

/// Largest N accepted. 1026 filters of the paper's 6250 bits are already
/// 800 KB per bucket, and the paper's experiments stop at 24 filters
/// (Fig. 12); the cap also keeps (N+2)*t far inside 64-bit milliseconds.
inline constexpr std::size_t fbf_past_filters_limit = 1024;

/// Longest refresh period, retry timeout, adaptation interval or step
/// accepted: one year. Longer is a unit mistake, and the bound keeps every
/// time sum (time + (N+2)*t) far inside the 64-bit millisecond range.
inline constexpr fbf_duration fbf_duration_limit = std::chrono::hours{24 * 365};

/// Which Algorithm 3 an adaptive FBF runs (docs/FBF.md, "Adaptation").
enum class fbf_adaptation : std::uint8_t {
  /// Tally's: Algorithm 3 with the five documented deviations (the
  /// shared-period model as curFPP, the predicted FPP, early refreshes, a
  /// shorter t applied at once, t grown only when a steady load allows it).
  tally,
  /// Algorithm 3 exactly as the paper prints it (Sec. III-E), for the
  /// experiments (`tally-bench experiment fbf-adaptive --adapt paper`):
  /// curFPP is Equation 3 (Sec. IV) of the current filters; curFPP >=
  /// 0.9 target: N+2 -> 2(N+2) filters and t -> t - step; curFPP <= 0.1
  /// target: one filter fewer and t -> t + step. A new t applies from the
  /// next period on. Only the bounds and the window safety rule stay.
  paper,
};

struct fbf_config {
  /// m, bits per constituent filter. Default: the paper's experiments
  /// (Sec. VI, m = 6250).
  std::uint64_t bits_per_filter = 6250;
  /// k, hash functions per filter. Default: the paper's experiments (k = 5).
  unsigned hashes = 5;
  /// N >= 1 past filters; N = 1 is the paper's basic FBF.
  std::size_t past_filters = 1;
  /// t, time between refreshes. Default: the paper's experiments (t = 5 s).
  fbf_duration refresh_period = std::chrono::seconds{5};
  /// The longest time a client keeps retrying an operation. An id must be
  /// remembered at least this long, so (N+1)*t >= retry_timeout is required
  /// (paper Sec. V-D). Default: Cassandra's counter write timeout (5000 ms).
  fbf_duration retry_timeout = std::chrono::seconds{5};
  /// The clock at creation: the first refresh is due at start + t.
  fbf_time start{};

  // Adaptive resizing (paper Sec. III-E, Algorithm 3); the fields below are
  // validated and used only when `adaptive` is true.
  bool adaptive = false;
  /// The false-positive probability the FBF is kept under, in (0, 1). Derived
  /// from the counter error the user accepts (paper Sec. II-A). Default: one
  /// valid update in a thousand wrongly dismissed as a retry.
  double target_fpp = 1e-3;
  /// How often Algorithm 3 runs. Default: the paper's thread runs every 1 s.
  fbf_duration adapt_interval = std::chrono::seconds{1};
  /// The additive change of t per adaptation. Default: the paper's t -> t-1
  /// with t in seconds.
  fbf_duration refresh_step = std::chrono::seconds{1};
  /// Bounds of t under adaptation. The minimum default equals the step, so
  /// one decrease from a whole number of seconds never reaches 0; the maximum
  /// bounds how long the future filter collects ids after an idle spell has
  /// let t grow one step per interval (12 default periods).
  fbf_duration min_refresh_period = std::chrono::seconds{1};
  fbf_duration max_refresh_period = std::chrono::seconds{60};
  /// Bounds of N under adaptation. The maximum default (32 filters) is above
  /// the largest FBF of the paper's experiments (24 filters, Fig. 12) and
  /// holds memory at 32*m bits per bucket.
  std::size_t min_past_filters = 1;
  std::size_t max_past_filters = 30;
  /// Tally's Algorithm 3 or the paper's as printed (experiments only: it
  /// does not keep the FPP under the target, docs/EXPERIMENTS.md).
  fbf_adaptation adaptation = fbf_adaptation::tally;
};

/// An upper bound on how long an id can stay a member after its insert,
/// over every state this configuration can reach (adaptation included): the
/// filter an id is inserted into (the future one) is dropped at the latest
/// after L refreshes, L <= max N + 2 filters (scale-ups append behind it,
/// each refresh moves it one place older), and two refreshes are at most
/// max(longest t, retry_timeout) apart (a refresh is due one period after the
/// previous one and is postponed at most until the oldest filter's
/// present_since + retry_timeout <= that previous refresh + retry_timeout).
/// So (N_max + 2) * max(t_max, R), with N_max, t_max the adaptive bounds when
/// `adaptive`, else N and t. A partition must keep the exact record of an id
/// (its journal `opids` entry) at least this long after the commit, so that
/// an FBF positive for a true duplicate is always confirmed (docs/NODE.md,
/// "Checkpoints"). Precondition: `cfg` passed make()'s validation.
fbf_duration fbf_max_id_lifetime(const fbf_config& cfg) noexcept;

/// What insert() did.
enum class insert_outcome : std::uint8_t {
  /// The element was not a member; it is now (in future and present).
  inserted,
  /// The element was already a member (or a false positive said so); nothing
  /// changed. For a counter update: a duplicate, acknowledge without applying.
  already_member,
};

class forgetful_bloom_filter {
public:
  /// An empty FBF with the configuration's m, k, N and t, clock at cfg.start.
  /// Errors (all errc::bad_config, the message names the field and the fix):
  ///  - bits_per_filter not in [1, 2^36], hashes not in [1, 32],
  ///    past_filters not in [1, fbf_past_filters_limit];
  ///  - refresh_period not in (0, 1 year], retry_timeout not in [0, 1 year];
  ///  - the window (N+1)*t shorter than retry_timeout (a retry could arrive
  ///    after its id was forgotten and be applied twice);
  ///  - when adaptive: target_fpp not in (0, 1); adapt_interval, refresh_step
  ///    or min_refresh_period not in (0, 1 year]; refresh_period not in
  ///    [min_refresh_period, max_refresh_period]; past_filters not in
  ///    [min_past_filters, max_past_filters]; min_past_filters == 0;
  ///    max_past_filters > fbf_past_filters_limit.
  static expected<forgetful_bloom_filter> make(const fbf_config& cfg);

  /// Algorithm 1: if the element is not a member (optimized check), sets it
  /// in the future and present filters and returns inserted; otherwise
  /// changes nothing and returns already_member. The insertion time is the
  /// clock of the last advance(): call advance(now) first. No allocation.
  insert_outcome insert(std::uint64_t element_hash) noexcept;
  /// Hashes the bytes with tally::hash_bytes (seed 0), then inserts.
  insert_outcome insert(std::string_view element) noexcept;

  /// The optimized membership check (paper Sec. III-D, Algorithm 2, Eq. 3):
  /// the future filter alone; each adjacent pair (present, past_1),
  /// (past_i, past_i+1); the oldest past filter alone. After a scale-up the
  /// born-past filters are skipped and a filter whose older neighbour is
  /// born-past is checked alone (docs/FBF.md, "Scale-up"). Never false for an
  /// element inserted at most retry_timeout ago. No allocation.
  bool contains(std::uint64_t element_hash) const noexcept;
  bool contains(std::string_view element) const noexcept;

  /// The simple check of paper Sec. III-A: the element is in any filter. For
  /// comparison only: its false-positive rate is never lower (Sec. VI-A).
  bool contains_in_any_filter(std::uint64_t element_hash) const noexcept;

  /// Moves the clock to `now`, performing in time order every refresh
  /// (Sec. III-C) and, if adaptive, every adaptation (Algorithm 3, one per
  /// adapt_interval since start) that is due at or before `now`; a refresh
  /// and an adaptation due at the same time run refresh first. Refreshes are
  /// due every t after the previous one (a longer t applies from the next
  /// period on; a shorter one, and an early refresh decided by the
  /// adaptation, at once: docs/FBF.md, "Adaptation"), and are postponed while
  /// the oldest filter still holds an id inserted less than retry_timeout ago
  /// (docs/FBF.md, "The window"). Cost
  /// is linear in the events due, except that a long idle gap (all filters
  /// empty, adaptation settled) is skipped in O(N).
  /// Errors: errc::invalid_argument if now is earlier than the clock (the
  /// state is unchanged; pass a monotonic clock).
  status advance(fbf_time now);

  /// The shared-period model (fbf_shared_period_fpp, Tally's correction of
  /// Equation 3 for N >= 2) of the current filters: what Algorithm 3 compares
  /// with target_fpp. Equation 3 itself, as the paper prints it, is
  /// fbf_false_positive_probability(bits_per_filter(), hash_count(), loads()).
  double current_fpp() const;

  /// The shared-period model of the FBF just after a refresh at `at`
  /// (>= clock()), assuming ids keep arriving at the current period's rate
  /// until then: what the adaptation acts on besides current_fpp()
  /// (docs/FBF.md, "Adaptation"). The lone check of the oldest filter is
  /// replaced by the heaviest filter's lone check if that is higher: every
  /// filter is the oldest one day, unless it is removed.
  double predicted_fpp_after_refresh(fbf_time at) const;

  // Accessors for the owner and for experiments.

  std::uint64_t bits_per_filter() const noexcept { return m_; }
  unsigned hash_count() const noexcept { return k_; }
  /// N, including born-past filters not yet refreshed away.
  std::size_t past_filter_count() const noexcept { return slots_.size() - 2; }
  /// N + 2.
  std::size_t filter_count() const noexcept { return slots_.size(); }
  fbf_duration refresh_period() const noexcept { return period_; }
  /// (N+1)*t: in steady state an id inserted at tau is remembered until at
  /// least tau + window() and forgotten by tau + window() + t.
  fbf_duration window() const noexcept {
    return period_ * static_cast<fbf_duration::rep>(past_filter_count() + 1);
  }
  fbf_time clock() const noexcept { return clock_; }
  /// When the next refresh will run (its postponement included).
  fbf_time next_refresh() const noexcept;
  /// Refreshes performed since creation.
  std::uint64_t refresh_count() const noexcept { return refreshes_; }
  /// Constituent filter i: 0 future, 1 present, 2.. past newest to oldest.
  /// Requires i < filter_count() (asserted in debug).
  const bloom_filter& filter(std::size_t i) const noexcept;
  /// Whether filter i was added empty by a scale-up and never was present.
  /// Requires i < filter_count() (asserted in debug).
  bool is_born_past(std::size_t i) const noexcept;
  /// l_i per filter, in filter order.
  std::vector<std::uint64_t> element_counts() const;
  /// l_i and the born-past mark per filter: the input of Equation 3.
  std::vector<filter_load> loads() const;
  /// l_i, own period count E_i and born-past mark per filter: the input of
  /// current_fpp().
  std::vector<filter_periods> periods() const;
  const fbf_config& config() const noexcept { return cfg_; }

private:
  struct slot {
    bloom_filter filter;
    /// When this filter became the present one; it then holds ids inserted
    /// before that time (as future), the oldest of which are forgotten when it
    /// is dropped. Meaningless while the filter is empty.
    fbf_time present_since;
    bool born_past;
    /// E_i: ids inserted while this filter was the future one, recorded when
    /// it stopped being the future (for the future itself: its count).
    std::uint64_t own = 0;
  };

  /// What one additive decrease (Algorithm 3, second branch) would do.
  struct shrink_plan {
    bool remove_oldest;
    fbf_duration period;
  };

  forgetful_bloom_filter(const fbf_config& cfg, std::vector<slot> slots);

  bool contains(const bloom_probe& p) const noexcept;
  /// Earliest time the oldest filter may be dropped without forgetting an id
  /// younger than retry_timeout.
  fbf_time oldest_drop_time() const noexcept;
  bool all_empty() const noexcept;
  void refresh(fbf_time at);
  void adapt(fbf_time at);
  /// fbf_adaptation::paper: Algorithm 3 as printed.
  void adapt_as_printed(fbf_time at);
  void scale_up(fbf_time at);
  shrink_plan plan_scale_down(fbf_time at) const;
  void scale_down(fbf_time at);
  bool skip_idle_refreshes(fbf_time now);
  /// Ids per millisecond expected until the next refresh: the current
  /// period's rate, or the last period's while the current one is younger
  /// than one adapt interval (fewer than one interval of arrivals).
  double arrival_rate(fbf_time at) const noexcept;
  /// The future filter's own count expected at `at`.
  std::uint64_t projected_future_own(fbf_time at) const noexcept;
  /// The shared-period model of the current layout with the future's own
  /// count raised to `future_own` (the present gets the same ids).
  double fpp_with_future_own(std::uint64_t future_own) const;
  double fpp_after_refresh_with(std::uint64_t future_own) const;
  /// The shared-period model at a steady `rate` (ids per ms) with period t
  /// and the current number of filters: whether a longer t is safe.
  double steady_fpp(double rate, fbf_duration t) const;

  fbf_config cfg_;
  std::uint64_t m_;
  unsigned k_;
  std::vector<slot> slots_;
  fbf_duration period_;
  fbf_time clock_;
  /// last refresh + the period in force at that refresh.
  fbf_time scheduled_refresh_;
  /// When the current period began (the last refresh, or start).
  fbf_time period_start_;
  /// Ids per ms of the last completed period (0 before the first refresh).
  double last_rate_ = 0.0;
  /// The clock and the future's count after the last adaptation (or at the
  /// last refresh, whichever is later): the recent arrival rate.
  fbf_time mark_at_;
  std::uint64_t mark_own_ = 0;
  fbf_time next_adapt_;
  std::uint64_t refreshes_ = 0;
};

} // namespace tally
