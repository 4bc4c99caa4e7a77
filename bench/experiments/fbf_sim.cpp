#include "bench/experiments/fbf_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bench/experiments/rng.hpp"
#include "common/hash.hpp"
#include "crdt/op_id.hpp"
#include "crdt/pn_counter.hpp"

namespace tally::experiments {

fbf_time at_seconds(double s) noexcept {
  return fbf_time{fbf_duration{std::llround(s * 1000.0)}};
}

double to_seconds(fbf_time t) noexcept {
  return static_cast<double>(t.time_since_epoch().count()) / 1000.0;
}

namespace {

double seconds_of(fbf_duration d) noexcept {
  return static_cast<double>(d.count()) / 1000.0;
}

// The filter-index sets the check of `kind` tests; an element is reported a
// member when all filters of some set hold it.
std::vector<std::vector<std::size_t>> check_sets(const forgetful_bloom_filter& f,
                                                 check_kind kind) {
  const std::size_t n = f.filter_count();
  std::vector<std::vector<std::size_t>> sets;
  switch (kind) {
    case check_kind::simple:
      for (std::size_t i = 0; i < n; ++i)
        sets.push_back({i});
      break;
    case check_kind::optimized:
      // The rule documented in forgetful_bloom_filter.hpp: future alone;
      // adjacent pairs of non-born-past filters; a non-born-past filter with
      // no (or a born-past) older neighbour alone.
      sets.push_back({0});
      for (std::size_t i = 1; i < n; ++i) {
        if (f.is_born_past(i))
          continue;
        if (i + 1 < n && !f.is_born_past(i + 1))
          sets.push_back({i, i + 1});
        else
          sets.push_back({i});
      }
      break;
    case check_kind::prototype:
      sets.push_back({0});
      sets.push_back({1, 2});
      if (n - 1 > 2) {
        for (std::size_t i = 2; i + 1 < n; ++i)
          sets.push_back({i, i + 1});
      } else {
        sets.push_back({n - 1});
      }
      break;
  }
  return sets;
}

// Bit j of f, read through the public API: a probe whose k positions are all
// j tests exactly that bit.
bool bit_at(const bloom_filter& f, std::uint64_t j) noexcept {
  bloom_probe p{};
  p.count = f.hash_count();
  p.m = f.bit_count();
  for (unsigned i = 0; i < p.count; ++i)
    p.bits[i] = j;
  return f.contains(p);
}

// Equation 3 of the paper (generalized to born-past filters) on f's counts.
double equation3(const forgetful_bloom_filter& f) {
  const auto p =
      fbf_false_positive_probability(f.bits_per_filter(), f.hash_count(), f.loads());
  return p.has_value() ? *p : std::numeric_limits<double>::quiet_NaN();
}

status increment(pn_counter& c) {
  auto effect = c.prepare(counter_update{1});
  if (!effect)
    return effect.err();
  return c.apply(*effect);
}

} // namespace

fbf_config paper_fbf(std::uint64_t m, unsigned k, std::size_t past_filters,
                     fbf_duration t) {
  fbf_config c;
  c.bits_per_filter = m;
  c.hashes = k;
  c.past_filters = past_filters;
  c.refresh_period = t;
  c.retry_timeout = fbf_duration::zero();
  c.adaptive = false;
  return c;
}

std::uint64_t inserted_id(std::uint64_t salt, std::uint64_t i) noexcept {
  return hash_pair(salt, 2 * i);
}

std::uint64_t absent_id(std::uint64_t salt, std::uint64_t i) noexcept {
  return hash_pair(salt, 2 * i + 1);
}

bool prototype_contains(const forgetful_bloom_filter& f,
                        std::uint64_t element_hash) noexcept {
  // Indexes: 0 future, 1 present, 2 = pastNewest .. n-1 = pastOldest.
  const std::size_t n = f.filter_count();
  const bloom_probe p = f.filter(0).probe(element_hash);
  if (f.filter(0).contains(p)) // FBF[future].get(el)
    return true;
  if (f.filter(1).contains(p) && f.filter(2).contains(p))
    return true;
  if (n - 1 > 2) { // pastOldest > pastNewest
    for (std::size_t i = 2; i + 1 < n; ++i)
      if (f.filter(i).contains(p) && f.filter(i + 1).contains(p))
        return true;
    return false; // the printed if-chain ends here: no oldest-alone check
  }
  return f.filter(n - 1).contains(p); // FBF[pastOldest].get(el), N = 1 only
}

bool check(const forgetful_bloom_filter& f, check_kind kind,
           std::uint64_t element_hash) noexcept {
  switch (kind) {
    case check_kind::optimized: return f.contains(element_hash);
    case check_kind::simple: return f.contains_in_any_filter(element_hash);
    case check_kind::prototype: return prototype_contains(f, element_hash);
  }
  return false;
}

double bitwise_fpp(const forgetful_bloom_filter& f, check_kind kind) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  // The inclusion-exclusion below costs C * 2^C for C checks: 20 checks is
  // 8 MB and tens of milliseconds; an FBF of 24 filters (24 checks) is left
  // to sampling.
  constexpr std::size_t max_checks = 20;
  const std::size_t n = f.filter_count();
  const auto sets = check_sets(f, kind);
  if (n > 64 || sets.size() > max_checks)
    return nan;
  const std::uint64_t m = f.bits_per_filter();
  // Which filters have each bit set.
  std::vector<std::uint64_t> filter_mask(m, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (f.filter(i).element_count() == 0)
      continue; // an empty filter has no bit set
    for (std::uint64_t j = 0; j < m; ++j)
      if (bit_at(f.filter(i), j))
        filter_mask[j] |= std::uint64_t{1} << i;
  }
  std::vector<std::uint64_t> set_mask;
  for (const auto& s : sets) {
    std::uint64_t mask = 0;
    for (std::size_t i : s)
      mask |= std::uint64_t{1} << i;
    set_mask.push_back(mask);
  }
  // g[T]: the number of positions at which every check of T holds (all the
  // check's filters have the bit). First count positions by their exact set
  // of holding checks, then sum over supersets (zeta transform).
  const std::size_t checks = set_mask.size();
  std::vector<double> g(std::size_t{1} << checks, 0.0);
  for (std::uint64_t j = 0; j < m; ++j) {
    std::size_t holds = 0;
    for (std::size_t c = 0; c < checks; ++c)
      if ((filter_mask[j] & set_mask[c]) == set_mask[c])
        holds |= std::size_t{1} << c;
    g[holds] += 1.0;
  }
  for (std::size_t b = 0; b < checks; ++b)
    for (std::size_t t = 0; t < g.size(); ++t)
      if (!(t & (std::size_t{1} << b)))
        g[t] += g[t | (std::size_t{1} << b)];
  // A probe of k independent uniform positions is a false positive when some
  // check holds at all k positions. Inclusion-exclusion over the non-empty
  // sets T of checks: P = sum (-1)^{|T|+1} (g[T] / m)^k. Every term is a
  // probability of a conjunction, so no large terms cancel.
  const double inv_m = 1.0 / static_cast<double>(m);
  const auto k = static_cast<int>(f.hash_count());
  double total = 0;
  for (std::size_t t = 1; t < g.size(); ++t) {
    if (g[t] == 0)
      continue;
    const double term = std::pow(g[t] * inv_m, k);
    total += (__builtin_popcountll(t) % 2 == 1) ? term : -term;
  }
  return std::max(total, 0.0);
}

std::uint64_t count_false_positives(const forgetful_bloom_filter& f,
                                    check_kind kind, std::uint64_t probes,
                                    std::uint64_t salt) {
  std::uint64_t hits = 0;
  for (std::uint64_t i = 0; i < probes; ++i)
    hits += check(f, kind, absent_id(salt, i)) ? 1 : 0;
  return hits;
}

std::vector<double> even_arrivals(std::uint64_t count, double span) {
  std::vector<double> out;
  out.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i)
    out.push_back(span * static_cast<double>(i) / static_cast<double>(count));
  return out;
}

// --- ramps -----------------------------------------------------------------

double ramp::duration() const {
  if (kind == shape::linear)
    return 2.0 * static_cast<double>(total) / (r0 + r1);
  const double T = static_cast<double>(total) / (r1 - r0);
  return T * std::log(r1 / r0);
}

double ramp::rate_at(double t) const {
  if (kind == shape::linear)
    return r0 + (r1 - r0) * t / duration();
  const double T = static_cast<double>(total) / (r1 - r0);
  return r0 * std::exp(t / T);
}

double ramp::time_at_rate(double r) const {
  if (kind == shape::linear)
    return (r - r0) / (r1 - r0) * duration();
  const double T = static_cast<double>(total) / (r1 - r0);
  return T * std::log(r / r0);
}

double ramp::arrival(std::uint64_t j) const {
  const double count = static_cast<double>(j + 1);
  if (kind == shape::linear) {
    // N(t) = r0 t + a t^2 / 2 = count.
    const double a = (r1 - r0) / duration();
    if (a == 0)
      return count / r0;
    return (std::sqrt(r0 * r0 + 2.0 * a * count) - r0) / a;
  }
  // N(t) = r0 T (e^{t/T} - 1) = count.
  const double T = static_cast<double>(total) / (r1 - r0);
  return T * std::log1p(count / (r0 * T));
}

std::vector<double> ramp::arrivals() const {
  std::vector<double> out;
  out.reserve(total);
  for (std::uint64_t j = 0; j < total; ++j)
    out.push_back(arrival(j));
  return out;
}

double profile_rate(const std::vector<std::pair<double, double>>& knots,
                    double t) {
  if (knots.empty())
    return 0;
  if (t <= knots.front().first)
    return knots.front().second;
  for (std::size_t i = 1; i < knots.size(); ++i) {
    const auto [t1, r1] = knots[i];
    if (t <= t1) {
      const auto [t0, r0] = knots[i - 1];
      return t1 == t0 ? r1 : r0 + (r1 - r0) * (t - t0) / (t1 - t0);
    }
  }
  return knots.back().second;
}

std::vector<double> profile_arrivals(
    const std::vector<std::pair<double, double>>& knots, double duration) {
  std::vector<double> out;
  double owed = 0; // fractional arrivals accumulated so far
  const auto steps = static_cast<std::int64_t>(std::llround(duration * 1000.0));
  for (std::int64_t ms = 0; ms < steps; ++ms) {
    const double mid = (static_cast<double>(ms) + 0.5) / 1000.0;
    owed += profile_rate(knots, mid) / 1000.0;
    while (owed >= 1.0) {
      out.push_back(static_cast<double>(ms + 1) / 1000.0);
      owed -= 1.0;
    }
  }
  return out;
}

// --- replay -----------------------------------------------------------------

expected<std::vector<fpp_point>> replay(const workload& w,
                                        const replay_params& p) {
  std::vector<fpp_point> out(w.readings.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].time = w.readings[i].first;
    out[i].x = w.readings[i].second;
  }
  const double period = seconds_of(p.fbf.refresh_period);
  rng phase_rng(derive_seed(p.seed, 0x9a5e));
  const auto reps = std::max(1u, p.repetitions);
  for (unsigned r = 0; r < reps; ++r) {
    auto made = forgetful_bloom_filter::make(p.fbf);
    if (!made)
      return made.err();
    forgetful_bloom_filter& f = *made;
    const double u = phase_rng.unit();
    const double phase =
        p.random_phase ? period * (static_cast<double>(r) + u) / reps : 0.0;
    const std::uint64_t salt = derive_seed(p.seed, 1, r);
    std::size_t next = 0;
    for (std::size_t i = 0; i < w.readings.size(); ++i) {
      const double at = w.readings[i].first;
      for (; next < w.arrivals.size() && w.arrivals[next] <= at; ++next) {
        if (auto st = f.advance(at_seconds(phase + w.arrivals[next])); !st)
          return st.err();
        (void)f.insert(inserted_id(salt, next));
      }
      if (auto st = f.advance(at_seconds(phase + at)); !st)
        return st.err();
      fpp_point& pt = out[i];
      // Probe ids of reading i: odd indexes above 2^32 * i, disjoint from the
      // inserted ids (even) and from the other readings' probes.
      const std::uint64_t base = static_cast<std::uint64_t>(i) << 32;
      auto read = [&](check_kind kind, fpp_reading& into) {
        for (std::uint64_t j = 0; j < p.probes; ++j)
          into.hits += check(f, kind, absent_id(salt, base + j)) ? 1 : 0;
        into.probes += p.probes;
        into.bitwise += bitwise_fpp(f, kind) / reps;
      };
      if (p.checks.optimized)
        read(check_kind::optimized, pt.optimized);
      if (p.checks.simple)
        read(check_kind::simple, pt.simple);
      if (p.checks.prototype)
        read(check_kind::prototype, pt.prototype);
      pt.model += equation3(f) / reps;
      pt.corrected += f.current_fpp() / reps;
      if (r == 0)
        pt.loads = f.element_counts();
    }
  }
  return out;
}

// --- adaptive ---------------------------------------------------------------

expected<std::vector<adaptive_point>> run_adaptive(const adaptive_params& p) {
  auto made = forgetful_bloom_filter::make(p.fbf);
  if (!made)
    return made.err();
  forgetful_bloom_filter& f = *made;
  const std::vector<double> arrivals = profile_arrivals(p.profile, p.duration);
  const std::uint64_t salt = derive_seed(p.seed, 3);
  std::vector<adaptive_point> out;
  std::size_t next = 0;
  const auto samples =
      static_cast<std::uint64_t>(std::floor(p.duration / p.sample_every + 1e-9));
  for (std::uint64_t s = 1; s <= samples; ++s) {
    const double at = p.sample_every * static_cast<double>(s);
    for (; next < arrivals.size() && arrivals[next] <= at; ++next) {
      if (auto st = f.advance(at_seconds(arrivals[next])); !st)
        return st.err();
      (void)f.insert(inserted_id(salt, next));
    }
    if (auto st = f.advance(at_seconds(at)); !st)
      return st.err();
    adaptive_point pt;
    pt.time = at;
    pt.rate = profile_rate(p.profile, at);
    const std::uint64_t base = s << 32;
    for (std::uint64_t j = 0; j < p.probes; ++j) {
      const std::uint64_t h = absent_id(salt, base + j);
      pt.optimized.hits += f.contains(h) ? 1 : 0;
      pt.prototype.hits += prototype_contains(f, h) ? 1 : 0;
    }
    pt.optimized.probes = pt.prototype.probes = p.probes;
    pt.optimized.bitwise = bitwise_fpp(f, check_kind::optimized);
    pt.prototype.bitwise = bitwise_fpp(f, check_kind::prototype);
    for (std::size_t j = next; j-- > 0 && arrivals[j] > at - p.recent;)
      if (f.contains(inserted_id(salt, j))
          && !prototype_contains(f, inserted_id(salt, j)))
        ++pt.prototype_forgotten;
    pt.model = equation3(f);
    pt.corrected = f.current_fpp();
    pt.predicted = f.predicted_fpp_after_refresh(f.next_refresh());
    pt.filters = f.filter_count();
    pt.period = seconds_of(f.refresh_period());
    pt.refreshes = f.refresh_count();
    pt.loads = f.element_counts();
    out.push_back(std::move(pt));
  }
  return out;
}

// --- counter ----------------------------------------------------------------

expected<counter_result> run_counter(const counter_params& p) {
  auto made = forgetful_bloom_filter::make(p.fbf);
  if (!made)
    return made.err();
  forgetful_bloom_filter& f = *made;
  if (p.clients == 0 || p.rate <= 0 || p.retry_delay_min < 0
      || p.retry_delay_max < p.retry_delay_min)
    return make_error(errc::invalid_argument,
                      "counter experiment: needs clients >= 1, rate > 0 and "
                      "0 <= retry_delay_min <= retry_delay_max.");
  struct request {
    double time;
    op_id id;
    bool retry;
  };
  rng gen(derive_seed(p.seed, 4));
  const std::uint64_t client_base = gen.next(); // client ids "chosen at random"
  std::vector<request> requests;
  for (std::uint64_t j = 0; j < p.operations; ++j) {
    const double t = static_cast<double>(j) / p.rate;
    const op_id id{client_base + j % p.clients, j / p.clients};
    requests.push_back({t, id, false});
    if (p.retry_every != 0 && (j + 1) % p.retry_every == 0) {
      const double delay = p.retry_delay_min
                           + (p.retry_delay_max - p.retry_delay_min) * gen.unit();
      requests.push_back({t + delay, id, true});
    }
  }
  std::stable_sort(requests.begin(), requests.end(),
                   [](const request& a, const request& b) {
                     return a.time < b.time;
                   });
  counter_result out;
  out.requests = requests.size();
  pn_counter gated;
  pn_counter plain;
  std::int64_t distinct = 0;
  double next_sample = p.sample_every;
  auto sample = [&](double at) {
    out.samples.push_back({at, distinct, gated.value(), plain.value()});
  };
  for (const request& rq : requests) {
    while (rq.time >= next_sample) {
      sample(next_sample);
      next_sample += p.sample_every;
    }
    if (auto st = f.advance(at_seconds(rq.time)); !st)
      return st.err();
    const bool fresh = f.insert(rq.id.hash()) == insert_outcome::inserted;
    if (fresh) {
      if (auto st = increment(gated); !st)
        return st.err();
    }
    if (auto st = increment(plain); !st)
      return st.err();
    if (!rq.retry) {
      ++distinct;
      out.dismissed_distinct += fresh ? 0 : 1;
    } else {
      out.applied_retries += fresh ? 1 : 0;
    }
  }
  sample(requests.empty() ? 0.0 : std::max(requests.back().time, next_sample - p.sample_every));
  return out;
}

} // namespace tally::experiments
