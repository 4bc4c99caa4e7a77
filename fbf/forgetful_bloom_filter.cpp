#include "fbf/forgetful_bloom_filter.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <string>
#include <utility>

#include "common/hash.hpp"

// The window guarantee, from the refresh cascade (paper Sec. III-C, Fig. 3).
//
// Index filters 0 (future), 1 (present), 2.. (pasts, newest first). An id x
// inserted at clock tau goes into the future filter A and the present filter
// B (Algorithm 1). Every refresh moves every filter one index up and drops
// the last one, so A and B stay neighbours, B just older than A, and neither
// is ever born-past (born-past filters are added empty behind the oldest, and
// A and B received an insert). The check therefore finds x
//   - while A is the future filter (future alone), then
//   - while both exist (adjacent pair of non-born-past filters), then
//   - once B is dropped, A is the oldest filter; if a scale-up later puts
//     born-past filters behind it, A's older neighbour is born-past; either
//     way A is checked alone,
// so x is forgotten exactly when A is dropped (by a refresh or a scale-down).
// A became the present filter at the first refresh after tau, at time
// present_since(A) > tau (advance(tau) ran every refresh due at or before tau
// before the insert). A filter is dropped only at a time >= present_since + R
// (R = retry timeout; oldest_drop_time), or when it is empty. Hence x is a
// member at every time <= tau + R: no retried id is ever forgotten early,
// whatever refreshes and adaptations happened in between.
//
// In steady state (fixed N and t) A is dropped N+1 refreshes after it became
// present, at present_since(A) + (N+1)*t, which is in (tau + (N+1)*t,
// tau + (N+2)*t]: the paper's ((N+1)t, (N+2)t] window. Because make() and
// every adaptation keep (N+1)*t >= R, the postponement rule never delays a
// steady-state refresh; it only acts right after a scale-down or a shorter t,
// where the cascade alone would drop a filter early.

namespace tally {

namespace {

// Algorithm 3's thresholds: scale up when curFPP >= 0.9 * targetFPP (the FPP
// is within 10% of the target), scale down when curFPP <= 0.1 * targetFPP.
constexpr double scale_up_threshold = 0.9;
constexpr double scale_down_threshold = 0.1;

// Multiplicative increase of Algorithm 3: N+2 filters become 2*(N+2).
constexpr std::size_t scale_up_factor = 2;

std::string ms(fbf_duration d) { return std::to_string(d.count()) + " ms"; }

error config_error(std::string message) {
  return make_error(errc::bad_config, std::move(message));
}

bool in_range(fbf_duration d, fbf_duration lo_exclusive) {
  return d > lo_exclusive && d <= fbf_duration_limit;
}

// ceil(d / n) for d >= 0, n >= 1.
fbf_duration ceil_div(fbf_duration d, std::size_t n) {
  const auto r = static_cast<fbf_duration::rep>(n);
  return fbf_duration{(d.count() + r - 1) / r};
}

fbf_duration window_of(std::size_t past_filters, fbf_duration t) {
  return t * static_cast<fbf_duration::rep>(past_filters + 1);
}

status validate(const fbf_config& c) {
  if (c.bits_per_filter == 0 || c.bits_per_filter > bloom_max_bits)
    return config_error("FBF bits_per_filter must be in [1, 2^36], got "
                        + std::to_string(c.bits_per_filter)
                        + "; size the filters for the ids expected per refresh "
                          "period.");
  if (c.hashes == 0 || c.hashes > bloom_max_hashes)
    return config_error("FBF hashes must be in [1, "
                        + std::to_string(bloom_max_hashes) + "], got "
                        + std::to_string(c.hashes) + ".");
  if (c.past_filters == 0 || c.past_filters > fbf_past_filters_limit)
    return config_error("FBF past_filters (N) must be in [1, "
                        + std::to_string(fbf_past_filters_limit) + "], got "
                        + std::to_string(c.past_filters)
                        + "; N = 1 is the basic FBF.");
  if (!in_range(c.refresh_period, fbf_duration::zero()))
    return config_error("FBF refresh_period must be positive and at most one "
                        "year, got "
                        + ms(c.refresh_period) + ".");
  if (c.retry_timeout < fbf_duration::zero()
      || c.retry_timeout > fbf_duration_limit)
    return config_error("FBF retry_timeout must be in [0, one year], got "
                        + ms(c.retry_timeout) + ".");
  const fbf_duration window = window_of(c.past_filters, c.refresh_period);
  if (window < c.retry_timeout)
    return config_error(
        "FBF window (N+1)*t = " + ms(window) + " (N = "
        + std::to_string(c.past_filters) + ", t = " + ms(c.refresh_period)
        + ") is shorter than the client retry timeout " + ms(c.retry_timeout)
        + ": a retried update could arrive after its id was forgotten and be "
          "applied twice. Raise the refresh period or the number of past "
          "filters, or lower the retry timeout.");
  if (!c.adaptive)
    return {};
  if (!(c.target_fpp > 0.0 && c.target_fpp < 1.0))
    return config_error("FBF target_fpp must be in (0, 1), got "
                        + std::to_string(c.target_fpp) + ".");
  if (!in_range(c.adapt_interval, fbf_duration::zero()))
    return config_error("FBF adapt_interval must be positive and at most one "
                        "year, got "
                        + ms(c.adapt_interval) + ".");
  if (!in_range(c.refresh_step, fbf_duration::zero()))
    return config_error("FBF refresh_step must be positive and at most one "
                        "year, got "
                        + ms(c.refresh_step) + ".");
  if (!in_range(c.min_refresh_period, fbf_duration::zero()))
    return config_error("FBF min_refresh_period must be positive and at most "
                        "one year, got "
                        + ms(c.min_refresh_period) + ".");
  if (c.max_refresh_period < c.min_refresh_period
      || c.max_refresh_period > fbf_duration_limit)
    return config_error("FBF max_refresh_period must be in [min_refresh_period, "
                        "one year], got "
                        + ms(c.max_refresh_period) + " with min "
                        + ms(c.min_refresh_period) + ".");
  if (c.refresh_period < c.min_refresh_period
      || c.refresh_period > c.max_refresh_period)
    return config_error("FBF refresh_period " + ms(c.refresh_period)
                        + " is outside [min_refresh_period, max_refresh_period]"
                          " = ["
                        + ms(c.min_refresh_period) + ", "
                        + ms(c.max_refresh_period)
                        + "]; widen the bounds or change the period.");
  if (c.min_past_filters == 0 || c.max_past_filters > fbf_past_filters_limit
      || c.min_past_filters > c.max_past_filters)
    return config_error("FBF past-filter bounds must satisfy 1 <= "
                        "min_past_filters <= max_past_filters <= "
                        + std::to_string(fbf_past_filters_limit) + ", got ["
                        + std::to_string(c.min_past_filters) + ", "
                        + std::to_string(c.max_past_filters) + "].");
  if (c.past_filters < c.min_past_filters
      || c.past_filters > c.max_past_filters)
    return config_error("FBF past_filters " + std::to_string(c.past_filters)
                        + " is outside [min_past_filters, max_past_filters] = ["
                        + std::to_string(c.min_past_filters) + ", "
                        + std::to_string(c.max_past_filters) + "].");
  return {};
}

} // namespace

fbf_duration fbf_max_id_lifetime(const fbf_config& cfg) noexcept {
  const std::size_t n = cfg.adaptive ? std::max(cfg.max_past_filters,
                                                cfg.past_filters)
                                     : cfg.past_filters;
  const fbf_duration t = cfg.adaptive ? std::max(cfg.max_refresh_period,
                                                 cfg.refresh_period)
                                      : cfg.refresh_period;
  return std::max(t, cfg.retry_timeout)
         * static_cast<fbf_duration::rep>(n + 2);
}

expected<forgetful_bloom_filter>
forgetful_bloom_filter::make(const fbf_config& cfg) {
  if (auto ok = validate(cfg); !ok)
    return ok.err();
  auto proto = bloom_filter::make(cfg.bits_per_filter, cfg.hashes);
  if (!proto) // unreachable after validate(); kept so no error is swallowed
    return config_error(proto.err().message());
  std::vector<slot> slots;
  slots.reserve(cfg.past_filters + 2);
  // The initial past filters are ordinary (not born-past): they are empty, so
  // the check of Algorithm 2 over them is the paper's, and they hold nothing
  // to forget. present_since is meaningless for empty filters.
  for (std::size_t i = 0; i < cfg.past_filters + 2; ++i)
    slots.push_back(slot{proto->empty_like(), cfg.start, false});
  return forgetful_bloom_filter{cfg, std::move(slots)};
}

forgetful_bloom_filter::forgetful_bloom_filter(const fbf_config& cfg,
                                               std::vector<slot> slots)
    : cfg_(cfg),
      m_(cfg.bits_per_filter),
      k_(cfg.hashes),
      slots_(std::move(slots)),
      period_(cfg.refresh_period),
      clock_(cfg.start),
      scheduled_refresh_(cfg.start + cfg.refresh_period),
      period_start_(cfg.start),
      mark_at_(cfg.start),
      next_adapt_(cfg.start + cfg.adapt_interval) {}

// --- hot path ---------------------------------------------------------------

bool forgetful_bloom_filter::contains(const bloom_probe& p) const noexcept {
  // Algorithm 2, generalized to born-past filters (see the header). Each
  // filter is tested at most once: `newer` carries filter i-1's answer into
  // the pair (i-1, i).
  const slot* s = slots_.data();
  const std::size_t n = slots_.size();
  if (s[0].filter.contains(p)) // FBF[future].get(el)
    return true;
  bool newer = s[1].filter.contains(p); // FBF[present].get(el)
  for (std::size_t i = 2; i < n; ++i) {
    // Born-past filters form a suffix (they are appended behind the oldest
    // and refreshes drop from that end), so the first one ends the scan and
    // filter i-1 is checked alone below.
    if (s[i].born_past)
      break;
    const bool hit = s[i].filter.contains(p);
    if (newer && hit) // FBF[i-1].get(el) && FBF[i].get(el)
      return true;
    newer = hit;
  }
  return newer; // FBF[pastOldest].get(el): the oldest checked alone
}

bool forgetful_bloom_filter::contains(std::uint64_t element_hash) const noexcept {
  return contains(slots_[0].filter.probe(element_hash));
}

bool forgetful_bloom_filter::contains(std::string_view element) const noexcept {
  return contains(hash_bytes(element));
}

bool forgetful_bloom_filter::contains_in_any_filter(
    std::uint64_t element_hash) const noexcept {
  const bloom_probe p = slots_[0].filter.probe(element_hash);
  for (const slot& s : slots_)
    if (s.filter.contains(p))
      return true;
  return false;
}

insert_outcome forgetful_bloom_filter::insert(std::uint64_t element_hash) noexcept {
  // Algorithm 1: one probe serves the check and both inserts.
  const bloom_probe p = slots_[0].filter.probe(element_hash);
  if (contains(p))
    return insert_outcome::already_member;
  slots_[0].filter.insert(p); // FBF[future].set(el)
  slots_[1].filter.insert(p); // FBF[present].set(el)
  return insert_outcome::inserted;
}

insert_outcome forgetful_bloom_filter::insert(std::string_view element) noexcept {
  return insert(hash_bytes(element));
}

// --- time -------------------------------------------------------------------

fbf_time forgetful_bloom_filter::oldest_drop_time() const noexcept {
  const slot& oldest = slots_.back();
  // An empty filter holds nothing to forget (born-past filters are empty).
  if (oldest.filter.element_count() == 0)
    return fbf_time::min();
  return oldest.present_since + cfg_.retry_timeout;
}

fbf_time forgetful_bloom_filter::next_refresh() const noexcept {
  // A scale-down can remove the filter that was postponing the refresh; the
  // refresh is then overdue and runs at once (at the clock), never in the
  // past.
  return std::max({scheduled_refresh_, oldest_drop_time(), clock_});
}

bool forgetful_bloom_filter::all_empty() const noexcept {
  for (const slot& s : slots_)
    if (s.filter.element_count() != 0)
      return false;
  return true;
}

status forgetful_bloom_filter::advance(fbf_time now) {
  if (now < clock_)
    return make_error(errc::invalid_argument,
                      "FBF advance() was called with a time "
                          + ms(clock_ - now)
                          + " earlier than its clock; time must not go "
                            "backwards, pass a monotonic (steady) clock.");
  for (;;) {
    const fbf_time r = next_refresh();
    const fbf_time a = cfg_.adaptive ? next_adapt_ : fbf_time::max();
    if (std::min(r, a) > now)
      break;
    if (r <= a && skip_idle_refreshes(now))
      continue;
    // Events run in time order, so the clock never moves back.
    assert(std::min(r, a) >= clock_);
    if (r <= a) {
      clock_ = r;
      refresh(r);
    } else {
      clock_ = a;
      adapt(a);
      next_adapt_ = a + cfg_.adapt_interval;
      mark_at_ = a;
      mark_own_ = slots_[0].filter.element_count();
    }
  }
  clock_ = now;
  return {};
}

void forgetful_bloom_filter::refresh(fbf_time at) {
  // Sec. III-C: the oldest filter is dropped, every other moves one place
  // older, the old future becomes the present, and a new empty future is
  // added. The dropped filter's storage is reused as the new future.
  // The future's own period ends here: record E for the shared-period model.
  slots_[0].own = slots_[0].filter.element_count();
  const auto length = std::max<fbf_duration::rep>(1, (at - period_start_).count());
  last_rate_ = static_cast<double>(slots_[0].own) / static_cast<double>(length);
  period_start_ = at;
  mark_at_ = at;
  mark_own_ = 0;
  std::rotate(slots_.rbegin(), slots_.rbegin() + 1, slots_.rend());
  slot& future = slots_[0];
  future.filter.clear();
  future.born_past = false;
  future.own = 0;
  future.present_since = at;
  slots_[1].present_since = at;
  scheduled_refresh_ = at + period_;
  ++refreshes_;
}

bool forgetful_bloom_filter::skip_idle_refreshes(fbf_time now) {
  // With every filter empty a refresh changes only the schedule and
  // present_since (there are no born-past filters either: they sit behind
  // the oldest filter that held ids and are dropped before it). After N+2
  // refreshes every present_since is set by them, whatever came before. If
  // adaptation is settled (an empty FBF has FPP 0, "scale down", and that
  // step changes nothing any more), the adaptations in between are no-ops.
  // So all but the last N+2 due refreshes are skipped by arithmetic, and
  // the last N+2 run normally.
  if (!all_empty())
    return false;
  if (cfg_.adaptive) {
    const shrink_plan plan = plan_scale_down(clock_);
    if (plan.remove_oldest || plan.period != period_)
      return false;
  }
  // All empty: no postponement, but the refresh may be overdue (see
  // next_refresh), and then runs at the clock.
  const fbf_time first = std::max(scheduled_refresh_, clock_);
  if (first > now)
    return false;
  const auto due = static_cast<std::uint64_t>((now - first) / period_) + 1;
  const std::uint64_t keep = slots_.size();
  if (due <= keep)
    return false;
  const std::uint64_t skip = due - keep;
  scheduled_refresh_ = first + period_ * static_cast<fbf_duration::rep>(skip);
  clock_ = scheduled_refresh_ - period_; // the last skipped refresh
  period_start_ = clock_;
  mark_at_ = clock_;
  mark_own_ = 0;
  last_rate_ = 0.0; // the skipped periods were empty
  refreshes_ += skip;
  if (cfg_.adaptive && next_adapt_ < scheduled_refresh_) {
    // Skip the no-op adaptations before the first refresh that will run; one
    // at the same time as it stays (refresh first, then adaptation).
    const auto gap = (scheduled_refresh_ - next_adapt_).count();
    const auto step = cfg_.adapt_interval.count();
    next_adapt_ += cfg_.adapt_interval * ((gap + step - 1) / step);
  }
  return true;
}

// --- adaptation (Sec. III-E, Algorithm 3) -----------------------------------

double forgetful_bloom_filter::current_fpp() const {
  const expected<double> p = fbf_shared_period_fpp(m_, k_, periods());
  // Cannot fail: make() validated m and k, N >= 1, and only past filters are
  // ever born-past. Were it to, 1 ("everything looks like a member") is the
  // answer that makes Algorithm 3 grow the FBF rather than shrink it.
  assert(p.has_value());
  return p.has_value() ? *p : 1.0;
}

namespace {

double model_or_one(std::uint64_t m, unsigned k,
                    const std::vector<filter_periods>& v) {
  const expected<double> p = fbf_shared_period_fpp(m, k, v);
  assert(p.has_value()); // as in current_fpp()
  return p.has_value() ? *p : 1.0;
}

} // namespace

double forgetful_bloom_filter::arrival_rate(fbf_time at) const noexcept {
  const std::uint64_t own = slots_[0].filter.element_count();
  const fbf_duration elapsed = at - period_start_;
  const fbf_duration interval = cfg_.adaptive ? cfg_.adapt_interval : period_;
  double rate = 0.0;
  if (elapsed >= interval) {
    rate = static_cast<double>(own) / static_cast<double>(elapsed.count());
  } else {
    // A young period: its own rate is noise (a few ids over a few ms), so
    // the last period's rate is the floor.
    rate = std::max(last_rate_, static_cast<double>(own)
                                    / static_cast<double>(interval.count()));
  }
  // The rate since the last adaptation, when that spans half an interval:
  // on a rising load it is above the period's average.
  const fbf_duration recent = at - mark_at_;
  if (recent * 2 >= interval && recent.count() > 0 && own >= mark_own_)
    rate = std::max(rate, static_cast<double>(own - mark_own_)
                              / static_cast<double>(recent.count()));
  return rate;
}

std::uint64_t
forgetful_bloom_filter::projected_future_own(fbf_time at) const noexcept {
  const std::uint64_t own = slots_[0].filter.element_count();
  if (at <= clock_)
    return own;
  const double more =
      arrival_rate(clock_) * static_cast<double>((at - clock_).count());
  return own + static_cast<std::uint64_t>(std::llround(more));
}

double forgetful_bloom_filter::fpp_with_future_own(std::uint64_t future_own) const {
  std::vector<filter_periods> v = periods();
  const std::uint64_t extra = future_own - std::min(future_own, v[0].own);
  v[0].elements += extra; // Algorithm 1: the future and the present get them
  v[0].own += extra;
  v[1].elements += extra;
  return model_or_one(m_, k_, v);
}

double forgetful_bloom_filter::fpp_after_refresh_with(std::uint64_t future_own) const {
  std::vector<filter_periods> v = periods();
  const std::uint64_t extra = future_own - std::min(future_own, v[0].own);
  v[0].elements += extra;
  v[0].own += extra;
  v[1].elements += extra;
  // The refresh (Sec. III-C): a new empty future, every filter one older,
  // the oldest dropped.
  v.pop_back();
  v.insert(v.begin(), filter_periods{0, 0, false});
  const double after = model_or_one(m_, k_, v);
  // Every filter is checked alone once it is the oldest (unless a
  // scale-down removes it first). A heavy filter behind the oldest would
  // raise the FPP later, when nothing but its drop can lower it, so the
  // prediction also puts the heaviest filter in the oldest's place.
  std::size_t oldest = 1;
  std::uint64_t heaviest = 0;
  for (std::size_t i = 1; i < v.size() && !v[i].born_past; ++i) {
    oldest = i;
    heaviest = std::max(heaviest, v[i].elements);
  }
  if (heaviest == v[oldest].elements)
    return after;
  v[oldest].elements = heaviest;
  v[oldest].own = std::min(v[oldest].own, heaviest);
  return std::max(after, model_or_one(m_, k_, v));
}

double forgetful_bloom_filter::steady_fpp(double rate, fbf_duration t) const {
  const auto e = static_cast<std::uint64_t>(
      std::llround(rate * static_cast<double>(t.count())));
  // Every filter full: the future holds one period, the others two.
  std::vector<filter_periods> v(slots_.size(), filter_periods{2 * e, e, false});
  v[0].elements = e;
  return model_or_one(m_, k_, v);
}

double forgetful_bloom_filter::predicted_fpp_after_refresh(fbf_time at) const {
  return fpp_after_refresh_with(projected_future_own(at));
}

void forgetful_bloom_filter::adapt(fbf_time at) {
  if (cfg_.adaptation == fbf_adaptation::paper) {
    adapt_as_printed(at);
    return;
  }
  // Algorithm 3 (Sec. III-E), acting on the worst of the FPP now and the FPP
  // the FBF will have around the next adaptation: just before it (the future
  // and present filled at the current rate) and just after a refresh then
  // (the present, with both its periods, becomes a past filter). The paper's
  // curFPP alone sees the jump at a refresh only once it happened
  // (docs/FBF.md, "Adaptation", deviation 1).
  const double up = scale_up_threshold * cfg_.target_fpp;
  const double down = scale_down_threshold * cfg_.target_fpp;
  const std::uint64_t own_now = slots_[0].filter.element_count();
  // The horizon is two intervals: a refresh can only be decided at an
  // adaptation, so deciding now covers the ids until the next one, and the
  // second interval absorbs a rate that is still rising.
  const std::uint64_t own_next =
      projected_future_own(at + 2 * cfg_.adapt_interval);
  const double after_next = fpp_after_refresh_with(own_next);
  // Both on the layout before any scale-up: born-past filters appended by
  // it would move the heaviest-filter substitution to another pair.
  const double after_now = fpp_after_refresh_with(own_now);
  const double worst =
      std::max({current_fpp(), fpp_with_future_own(own_next), after_next});
  if (worst >= up) {
    scale_up(at);
    // Deviation 2: waiting for the next adaptation would let the refresh
    // push the FPP over the threshold; refresh now, while the present filter
    // is lighter, if that is better. The safety rule still applies:
    // next_refresh() postpones it while the oldest filter holds ids younger
    // than the retry timeout.
    if (after_next >= up && after_now < after_next)
      scheduled_refresh_ = std::min(scheduled_refresh_, at);
  } else if (worst <= down) {
    scale_down(at);
  }
}

void forgetful_bloom_filter::adapt_as_printed(fbf_time at) {
  // Algorithm 3 as printed (Sec. III-E), curFPP = Equation 3 (Sec. IV,
  // generalized to born-past filters, which it skips like contains() does).
  const auto eq3 = fbf_false_positive_probability(m_, k_, loads());
  if (!eq3)
    return; // unreachable: m, k >= 1 and at least 3 filters, never born-past
  if (*eq3 >= scale_up_threshold * cfg_.target_fpp) {
    // scaleUpFilters() and decreaseRefreshPeriod(); the shorter t applies
    // from the next period on (the paper says nothing of the current one).
    const std::size_t total = slots_.size();
    const std::size_t wanted =
        std::min(scale_up_factor * total, cfg_.max_past_filters + 2);
    for (std::size_t i = total; i < wanted; ++i)
      slots_.push_back(slot{slots_[0].filter.empty_like(), at, true});
    const fbf_duration floor_for_window =
        ceil_div(cfg_.retry_timeout, past_filter_count() + 1);
    period_ = std::max(
        {period_ - cfg_.refresh_step, cfg_.min_refresh_period, floor_for_window});
  } else if (*eq3 <= scale_down_threshold * cfg_.target_fpp) {
    // scaleDownFilters() and increaseRefreshPeriod(), "additively": one
    // filter fewer (the oldest past one, under the same bounds and safety
    // rule as Tally's) and t + step, up to max_refresh_period.
    const fbf_duration t =
        std::min(period_ + cfg_.refresh_step, cfg_.max_refresh_period);
    const std::size_t n = past_filter_count();
    if (n > cfg_.min_past_filters && window_of(n - 1, t) >= cfg_.retry_timeout
        && oldest_drop_time() <= at)
      slots_.pop_back();
    period_ = t;
  }
}

void forgetful_bloom_filter::scale_up(fbf_time at) {
  // scaleUpFilters(): N+2 filters become 2*(N+2), capped at
  // max_past_filters + 2. The new filters are born-past: empty, appended
  // behind the oldest, never inserted into. Adding them there forgets
  // nothing: the previous oldest filter's older neighbour is now born-past,
  // so it is still checked alone (docs/FBF.md, "Scale-up"). Adding them at
  // the newest end instead would shift every id one place older at once.
  const std::size_t total = slots_.size();
  const std::size_t wanted =
      std::min(scale_up_factor * total, cfg_.max_past_filters + 2);
  for (std::size_t i = total; i < wanted; ++i)
    slots_.push_back(slot{slots_[0].filter.empty_like(), at, true});
  // decreaseRefreshPeriod(): t -> t - step, not below min_refresh_period nor
  // below the shortest t whose window (N+1)*t still covers the retry timeout
  // (clamp). The window only grows here, since N grew and (N+1)*t >= R held.
  const fbf_duration floor_for_window =
      ceil_div(cfg_.retry_timeout, past_filter_count() + 1);
  const fbf_duration t = std::max(
      {period_ - cfg_.refresh_step, cfg_.min_refresh_period, floor_for_window});
  period_ = std::min(t, period_);
  // Deviation 3 (docs/FBF.md, "Adaptation"): the shorter t applies to the
  // current period at once; if the period is already longer, the refresh is
  // due now (next_refresh() keeps the safety rule).
  scheduled_refresh_ = std::min(scheduled_refresh_, period_start_ + period_);
}

forgetful_bloom_filter::shrink_plan
forgetful_bloom_filter::plan_scale_down(fbf_time at) const {
  // increaseRefreshPeriod(): t -> t + step, at most max_refresh_period.
  // Deviation 4 (docs/FBF.md, "Adaptation"): only while a steady load at the
  // current rate would keep the FPP <= 0.1 * target with the longer t, so t
  // does not drift up in a lull and then hold too many ids per filter.
  const fbf_duration longer =
      std::min(period_ + cfg_.refresh_step, cfg_.max_refresh_period);
  const fbf_duration t =
      longer != period_
              && steady_fpp(arrival_rate(at), longer)
                     <= scale_down_threshold * cfg_.target_fpp
          ? longer
          : period_;
  // scaleDownFilters(): remove the oldest past filter, unless that would
  //  - go below min_past_filters,
  //  - make the window N*t (N-1 pasts) shorter than the retry timeout
  //    (skip, keeping the filter: the window never drops below R), or
  //  - forget an id inserted less than R ago (its filter is not yet
  //    droppable; a later adaptation will try again).
  const std::size_t n = past_filter_count();
  const bool remove = n > cfg_.min_past_filters
                      && window_of(n - 1, t) >= cfg_.retry_timeout
                      && oldest_drop_time() <= at;
  return {remove, t};
}

void forgetful_bloom_filter::scale_down(fbf_time at) {
  const shrink_plan plan = plan_scale_down(at);
  if (plan.remove_oldest)
    slots_.pop_back();
  period_ = plan.period;
}

// --- accessors --------------------------------------------------------------

const bloom_filter& forgetful_bloom_filter::filter(std::size_t i) const noexcept {
  assert(i < slots_.size());
  return slots_[i].filter;
}

bool forgetful_bloom_filter::is_born_past(std::size_t i) const noexcept {
  assert(i < slots_.size());
  return slots_[i].born_past;
}

std::vector<std::uint64_t> forgetful_bloom_filter::element_counts() const {
  std::vector<std::uint64_t> out;
  out.reserve(slots_.size());
  for (const slot& s : slots_)
    out.push_back(s.filter.element_count());
  return out;
}

std::vector<filter_periods> forgetful_bloom_filter::periods() const {
  std::vector<filter_periods> out;
  out.reserve(slots_.size());
  for (const slot& s : slots_)
    out.push_back({s.filter.element_count(), s.own, s.born_past});
  out[0].own = out[0].elements; // the future's own period is still running
  return out;
}

std::vector<filter_load> forgetful_bloom_filter::loads() const {
  std::vector<filter_load> out;
  out.reserve(slots_.size());
  for (const slot& s : slots_)
    out.push_back({s.filter.element_count(), s.born_past});
  return out;
}

} // namespace tally
