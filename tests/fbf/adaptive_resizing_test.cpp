#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "fbf/forgetful_bloom_filter.hpp"
#include "tests/fbf/fbf_test_support.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace std::chrono_literals;
using tally::test::advance_ok;
using tally::test::at_ms;
using tally::test::at_s;
using tally::test::element;
using tally::test::make_fbf;

namespace {

fbf_config adaptive(std::size_t n, fbf_duration t, fbf_duration retry,
                    double target, std::uint64_t m = 6250, unsigned k = 5) {
  fbf_config c;
  c.bits_per_filter = m;
  c.hashes = k;
  c.past_filters = n;
  c.refresh_period = t;
  c.retry_timeout = retry;
  c.adaptive = true;
  c.target_fpp = target;
  return c;
}

// Inserts fresh ids until the modelled FPP reaches `fpp`.
void load_until(forgetful_bloom_filter& f, double fpp, std::uint64_t salt) {
  for (std::uint64_t i = 0; f.current_fpp() < fpp; ++i)
    (void)f.insert(element(salt, i));
}

} // namespace

BOOST_AUTO_TEST_SUITE(fbf)

BOOST_AUTO_TEST_CASE(adaptation_doubles_the_filters_and_shortens_the_period_near_target) {
  // Algorithm 3, first branch, as in the paper's Fig. 13: 3 filters become 6
  // (a 4-FBF) and t drops by one step.
  // The ids arrived at 0 s; projected at that rate to the next adaptation,
  // the FPP after a refresh would exceed the threshold, so the FBF also
  // refreshes at once (docs/FBF.md, "Adaptation"): the born-past filters
  // appended behind the oldest have moved one place.
  auto f = make_fbf(adaptive(1, 5s, 5s, 1e-3));
  load_until(f, 0.9e-3, 1);
  advance_ok(f, at_s(1));
  BOOST_TEST(f.filter_count() == 6u);
  BOOST_TEST(f.past_filter_count() == 4u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{4s}.count());
  BOOST_TEST(f.refresh_count() == 1u);
  BOOST_TEST((f.next_refresh() == at_s(5)));
  for (std::size_t i = 0; i < 6; ++i)
    BOOST_TEST(f.is_born_past(i) == (i >= 4), "filter " << i);
}

BOOST_AUTO_TEST_CASE(algorithm_3_as_printed_scales_up_on_equation_3_and_shortens_t_from_the_next_period) {
  // fbf_adaptation::paper, the same state as the test above: N+2 -> 2(N+2)
  // born-past filters and t -> t - 1 s, but no early refresh, and the
  // current period keeps its length (the refresh stays due at 5 s).
  fbf_config c = adaptive(1, 5s, 5s, 1e-3);
  c.adaptation = fbf_adaptation::paper;
  auto f = make_fbf(c);
  for (std::uint64_t i = 0;
       *fbf_false_positive_probability(f.bits_per_filter(), f.hash_count(), f.loads())
       < 0.9e-3;
       ++i)
    (void)f.insert(element(1, i));
  advance_ok(f, at_s(1));
  BOOST_TEST(f.filter_count() == 6u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{4s}.count());
  BOOST_TEST(f.refresh_count() == 0u);
  BOOST_TEST((f.next_refresh() == at_s(5)));
  // Nothing changed the loads, so Eq. 3 is still high at 2 s: it scales up
  // again (Tally's version would have refreshed early instead). The current
  // period still ends at 5 s, although t is now 3 s.
  advance_ok(f, at_s(2));
  BOOST_TEST(f.filter_count() == 12u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{3s}.count());
  advance_ok(f, at_ms(4'999));
  BOOST_TEST(f.refresh_count() == 0u);
  advance_ok(f, at_s(5));
  BOOST_TEST(f.refresh_count() == 1u);
}

BOOST_AUTO_TEST_CASE(algorithm_3_as_printed_lengthens_t_every_quiet_interval) {
  // Second branch as printed: one filter fewer and t + 1 s at every
  // adaptation with curFPP <= 0.1 target, up to max_refresh_period (Tally's
  // version lengthens t only when a steady load would allow it).
  fbf_config c = adaptive(3, 5s, 1s, 1e-3);
  c.adaptation = fbf_adaptation::paper;
  c.max_refresh_period = 8s;
  auto f = make_fbf(c);
  advance_ok(f, at_ms(1'500));
  BOOST_TEST(f.past_filter_count() == 2u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{6s}.count());
  advance_ok(f, at_ms(10'500));
  BOOST_TEST(f.past_filter_count() == 1u); // min_past_filters
  BOOST_TEST(f.refresh_period().count() == fbf_duration{8s}.count());
}

BOOST_AUTO_TEST_CASE(adaptation_acts_on_the_fpp_predicted_after_the_next_refresh) {
  // N = 1: the present filter holds two periods of ids once the refresh
  // makes it the oldest, checked alone. Its FPP now (paired) is far below
  // the target, its FPP after the refresh is not: the FBF refreshes early.
  fbf_config c = adaptive(1, 10s, 1s, 1e-2);
  auto f = make_fbf(c);
  std::uint64_t next = 0;
  // 50 ids/s. At 10 s the first refresh makes the 500 ids of period 0 the
  // past filter's; the present gets period 1's ids on top. By about 12 s it
  // would hold ~600 ids (p ~ 0.009 alone) by the next adaptation.
  for (std::int64_t ms = 0; ms < 16'000; ms += 100) {
    advance_ok(f, at_ms(ms));
    for (int i = 0; i < 5; ++i)
      (void)f.insert(element(31, next++));
    BOOST_TEST_REQUIRE(f.current_fpp() < 0.9 * c.target_fpp, "at " << ms << " ms");
  }
  BOOST_TEST(f.refresh_count() >= 2u); // the second refresh came before 20 s
  BOOST_TEST((f.refresh_period() < fbf_duration{10s}));
  // Every filter's lone FPP stays under the target.
  for (std::size_t i = 0; i < f.filter_count(); ++i)
    BOOST_TEST(f.filter(i).false_positive_probability() < c.target_fpp);
}

BOOST_AUTO_TEST_CASE(adaptation_changes_nothing_between_10_and_90_percent_of_target) {
  // The adaptation at 1 s projects the ids seen so far (all at 0 s, so
  // their count per second) two intervals ahead and acts on the worst of
  // now, just before and just after a refresh at 3 s:
  // predicted_fpp_after_refresh(2 s) seen from 0 s projects the same count.
  auto f = make_fbf(adaptive(1, 5s, 5s, 1e-3));
  for (std::uint64_t i = 0; f.predicted_fpp_after_refresh(at_s(2)) < 0.2e-3; ++i)
    (void)f.insert(element(2, i));
  BOOST_TEST_REQUIRE(f.predicted_fpp_after_refresh(at_s(2)) < 0.9e-3);
  advance_ok(f, at_s(1));
  BOOST_TEST(f.past_filter_count() == 1u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{5s}.count());
}

BOOST_AUTO_TEST_CASE(adaptation_removes_one_filter_and_lengthens_the_period_when_fpp_is_low) {
  // Algorithm 3, second branch: additive decrease of filters, additive
  // increase of t, once per adapt interval, down to min_past_filters.
  auto f = make_fbf(adaptive(4, 5s, 5s, 1e-3));
  const std::size_t n_after[] = {3, 2, 1, 1, 1};
  for (std::int64_t s = 1; s <= 5; ++s) {
    advance_ok(f, at_s(s));
    BOOST_TEST_CONTEXT("after adaptation " << s) {
      BOOST_TEST(f.past_filter_count() == n_after[s - 1]);
      BOOST_TEST(f.refresh_period().count() == fbf_duration{5s + s * 1s}.count());
    }
  }
}

BOOST_AUTO_TEST_CASE(adaptation_stops_growing_at_max_past_filters) {
  fbf_config c = adaptive(1, 5s, 5s, 1e-3);
  c.max_past_filters = 6;
  auto f = make_fbf(c);
  load_until(f, 0.9e-3, 3);
  advance_ok(f, at_s(1)); // 3 -> 6 filters
  BOOST_TEST_REQUIRE(f.past_filter_count() == 4u);
  load_until(f, 0.9e-3, 4);
  advance_ok(f, at_s(2)); // 6 -> min(12, 8) filters
  BOOST_TEST(f.past_filter_count() == 6u);
  load_until(f, 0.9e-3, 5);
  advance_ok(f, at_s(3));
  BOOST_TEST(f.past_filter_count() == 6u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{2s}.count());
}

BOOST_AUTO_TEST_CASE(scale_up_clamps_the_period_so_the_window_covers_the_retry_timeout) {
  // At the filter cap a scale-up can only shorten t; t - step would make
  // (N+1)t = 2 s < 4 s, so t stays at 2 s.
  fbf_config c = adaptive(1, 2s, 4s, 1e-3);
  c.max_past_filters = 1;
  c.min_refresh_period = 100ms;
  auto f = make_fbf(c);
  load_until(f, 0.9e-3, 6);
  advance_ok(f, at_s(1));
  BOOST_TEST(f.past_filter_count() == 1u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{2s}.count());
  BOOST_TEST(f.window().count() >= fbf_duration{4s}.count());
}

BOOST_AUTO_TEST_CASE(scale_down_keeps_a_filter_whose_removal_would_shorten_the_window) {
  // N = 2, t = 3 s, R = 9 s. Removing a filter now gives N = 1, t = 4 s:
  // window 8 s < 9 s, so only t grows. One interval later N = 1, t = 5 s
  // gives 10 s >= 9 s and the filter goes.
  auto f = make_fbf(adaptive(2, 3s, 9s, 1e-3));
  advance_ok(f, at_s(1));
  BOOST_TEST(f.past_filter_count() == 2u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{4s}.count());
  advance_ok(f, at_s(2));
  BOOST_TEST(f.past_filter_count() == 1u);
  BOOST_TEST(f.refresh_period().count() == fbf_duration{5s}.count());
  BOOST_TEST(f.window().count() >= fbf_duration{9s}.count());
}

BOOST_AUTO_TEST_CASE(scale_up_keeps_the_previous_oldest_filter_checked_alone) {
  // x survives only in the oldest filter when the scale-up appends born-past
  // filters behind it. Its partner is gone, so it must still be checked
  // alone, and it must then live on until that filter is dropped.
  fbf_config c = adaptive(1, 1s, 2s, 1e-6, 1024, 2);
  c.adapt_interval = 2500ms;
  c.min_refresh_period = 500ms;
  auto f = make_fbf(c);
  advance_ok(f, at_ms(500));
  const std::uint64_t x = element(20, 0);
  BOOST_TEST_REQUIRE((f.insert(x) == insert_outcome::inserted));
  advance_ok(f, at_ms(2499)); // refreshes at 1 s and 2 s
  BOOST_TEST_REQUIRE(f.filter_count() == 3u);
  BOOST_TEST_REQUIRE(f.filter(2).contains(x));
  BOOST_TEST_REQUIRE(!f.filter(1).contains(x));
  // Scale-up: 6 filters, t = 500 ms, which applies to the current period at
  // once: the period began at 2 s, so the refresh runs at 2.5 s too.
  advance_ok(f, at_ms(2500));
  BOOST_TEST_REQUIRE(f.filter_count() == 6u);
  BOOST_TEST_REQUIRE(f.refresh_count() == 3u);
  BOOST_TEST_REQUIRE(f.is_born_past(4));
  BOOST_TEST_REQUIRE(!f.is_born_past(3));
  BOOST_TEST(f.filter(3).contains(x));
  BOOST_TEST(f.contains(x));
  // Refreshes at 3.0 and 3.5 s move x's filter to the end; at 4.0 s it is
  // dropped (it became present at 1 s, 1 s + R = 3 s <= 4.0 s).
  advance_ok(f, at_ms(3999));
  BOOST_TEST(f.contains(x));
  advance_ok(f, at_ms(4000));
  BOOST_TEST(!f.contains(x));
}

BOOST_AUTO_TEST_CASE(scale_up_does_not_change_the_modelled_fpp) {
  // Born-past filters add no check, and the previous oldest keeps its lone
  // check: the model over the new layout equals the model over the old one.
  fbf_config c = adaptive(1, 1s, 1s, 1e-3);
  c.adapt_interval = 2500ms; // first adaptation after the loading below
  auto f = make_fbf(c);
  std::uint64_t next = 0;
  for (int period = 0; period < 3; ++period) {
    advance_ok(f, at_ms(period * 1000 + 1));
    for (int i = 0; i < 40; ++i)
      (void)f.insert(element(21, next++));
  }
  load_until(f, 0.9e-3, 22);
  const double before = f.current_fpp();
  const std::vector<filter_periods> old = f.periods();
  advance_ok(f, at_ms(2500));
  BOOST_TEST_REQUIRE(f.filter_count() == 6u);
  // The projected load also makes it refresh at once (docs/FBF.md,
  // "Adaptation"); with no new ids that changes no answer either: the old
  // future alone and the pair (new present, its older neighbour) fail on
  // the same bits.
  auto old_layout = fbf_shared_period_fpp(6250, 5, old);
  BOOST_TEST_REQUIRE(old_layout.has_value());
  BOOST_TEST(f.current_fpp() == *old_layout, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(f.current_fpp() == before, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(scale_down_postpones_a_refresh_that_would_forget_an_id_younger_than_the_retry_timeout) {
  // N = 2, t = 4 s, R = 10 s. x is inserted at 3.9 s; refreshes at 4 s and
  // 8 s leave its future copy in B1 (present since 4 s). The adaptation at
  // 10 s removes B2 (present since 0 s, droppable at 10 s) and sets t = 5 s:
  // window 10 s. B1 is now the oldest; the refresh scheduled at 12 s would
  // drop it and forget x at age 8.1 s. It must wait until 4 s + R = 14 s.
  fbf_config c = adaptive(2, 4s, 10s, 0.5, 1 << 16, 5);
  c.adapt_interval = 10s;
  auto f = make_fbf(c);
  advance_ok(f, at_ms(3900));
  const std::uint64_t x = element(23, 0);
  BOOST_TEST_REQUIRE((f.insert(x) == insert_outcome::inserted));
  advance_ok(f, at_s(10));
  BOOST_TEST_REQUIRE(f.past_filter_count() == 1u);
  BOOST_TEST_REQUIRE(f.refresh_period().count() == fbf_duration{5s}.count());
  BOOST_TEST((f.next_refresh() == at_s(14)));
  advance_ok(f, at_ms(13'900)); // tau + R
  BOOST_TEST(f.contains(x));
  BOOST_TEST(f.refresh_count() == 2u);
  advance_ok(f, at_s(14));
  BOOST_TEST(!f.contains(x));
  BOOST_TEST((f.next_refresh() == at_s(19)));
}

BOOST_AUTO_TEST_CASE(scale_up_during_a_postponed_refresh_runs_it_at_once_not_in_the_past) {
  // N = 4, t = 1 s, R = 4.5 s, adaptations every 700 ms, m = 256, k = 1,
  // target 0.5. Eight ids per period keep the FPP (now and predicted)
  // between 10% and 90% of the target (no adaptation) through period 7;
  // period 8 gets one id and periods 9-11 none. Fj is the filter that was
  // the future in period j. At 12.6 s the FPP is low (F7, oldest, holds 9
  // ids): F7 (present since 8 s) goes, t becomes 2 s (no arrivals), and the
  // new oldest (F8, present since 9 s, one id) postpones the refresh
  // scheduled at 13 s to 13.5 s. A burst then makes the 13.3 s adaptation
  // scale up; the born-past filters behind F8 can be dropped at once, so the
  // overdue refresh runs at 13.3 s. Running it at 13 s would move the clock
  // back and schedule the next one at 14 s.
  fbf_config c = adaptive(4, 1s, 4500ms, 0.5, 256, 1);
  c.adapt_interval = 700ms;
  c.min_refresh_period = 100ms;
  auto f = make_fbf(c);
  std::uint64_t next = 0;
  for (std::int64_t period = 0; period < 12; ++period) {
    advance_ok(f, at_ms(period * 1000 + 1));
    const int ids = period <= 7 ? 8 : period == 8 ? 1 : 0;
    for (int i = 0; i < ids; ++i)
      (void)f.insert(element(24, next++));
  }
  advance_ok(f, at_ms(12'599));
  BOOST_TEST_REQUIRE(f.past_filter_count() == 4u); // no adaptation so far
  BOOST_TEST_REQUIRE(f.refresh_period().count() == fbf_duration{1s}.count());
  BOOST_TEST_REQUIRE(f.refresh_count() == 12u);
  advance_ok(f, at_ms(12'600));
  BOOST_TEST_REQUIRE(f.past_filter_count() == 3u, "the 12.6 s scale-down");
  BOOST_TEST_REQUIRE((f.next_refresh() == at_ms(13'500)));
  for (int i = 0; i < 60; ++i)
    (void)f.insert(element(25, static_cast<std::uint64_t>(i)));
  advance_ok(f, at_ms(13'300));
  BOOST_TEST_REQUIRE(f.filter_count() == 10u);
  BOOST_TEST(f.refresh_count() == 13u);
  BOOST_TEST((f.next_refresh() == at_ms(14'300)));
}

BOOST_AUTO_TEST_CASE(no_id_is_forgotten_within_the_retry_timeout_across_adaptations) {
  // Random bursts drive the FPP up and down, so the FBF scales up (with
  // born-past filters) and down repeatedly; every id inserted at most R ago
  // must still be a member after every step, and the window never drops
  // below R.
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    std::size_t ups = 0, downs = 0, missed = 0, short_windows = 0;
    for (int round = 0; round < 8; ++round) {
      const std::size_t n = rng.uniform(1, 3);
      const fbf_duration t{static_cast<std::int64_t>(rng.uniform(1000, 4000))};
      const fbf_duration retry{static_cast<std::int64_t>(
          rng.uniform(t.count(), t.count() * static_cast<std::int64_t>(n + 1)))};
      fbf_config c = adaptive(n, t, retry, 1e-3, 2048, 4);
      c.adapt_interval = fbf_duration{static_cast<std::int64_t>(rng.uniform(200, 1500))};
      c.refresh_step = fbf_duration{static_cast<std::int64_t>(rng.uniform(100, 1500))};
      c.min_refresh_period = 100ms;
      c.max_refresh_period = 10s;
      c.max_past_filters = 20;
      auto f = make_fbf(c);
      struct id {
        std::uint64_t hash;
        fbf_time tau;
      };
      std::vector<id> live;
      std::uint64_t next = 0;
      fbf_time now = at_ms(0);
      double rate = 0.0; // ids per second
      std::size_t filters = f.filter_count();
      for (int step = 0; step < 400; ++step) {
        if (rng.chance(0.05))
          rate = rng.chance(0.5) ? 0.0 : static_cast<double>(rng.uniform(10, 400));
        const auto dt = static_cast<std::int64_t>(rng.uniform(10, 400));
        now += fbf_duration{dt};
        advance_ok(f, now);
        ups += f.filter_count() > filters ? 1 : 0;
        downs += f.filter_count() < filters ? 1 : 0;
        filters = f.filter_count();
        short_windows += f.window() < retry ? 1 : 0;
        for (auto i = static_cast<std::int64_t>(rate * static_cast<double>(dt) / 1000.0);
             i > 0; --i) {
          const std::uint64_t h = element(rng.seed + static_cast<std::uint64_t>(round), next++);
          if (f.insert(h) == insert_outcome::inserted)
            live.push_back({h, now});
        }
        std::vector<id> still;
        for (const id& x : live) {
          if (now - x.tau > retry)
            continue;
          missed += f.contains(x.hash) ? 0 : 1;
          still.push_back(x);
        }
        live.swap(still);
      }
    }
    BOOST_TEST(missed == 0u);
    BOOST_TEST(short_windows == 0u);
    BOOST_TEST_MESSAGE("scale-ups " << ups << ", scale-downs " << downs);
    BOOST_TEST(ups > 0u);
    BOOST_TEST(downs > 0u);
  }
}

BOOST_AUTO_TEST_CASE(adaptation_keeps_n_and_t_within_their_bounds) {
  tally::test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    fbf_config c = adaptive(2, 3s, 3s, 1e-3, 2048, 4);
    c.min_refresh_period = 1s;
    c.max_refresh_period = 8s;
    c.min_past_filters = 2;
    c.max_past_filters = 12;
    auto f = make_fbf(c);
    std::uint64_t next = 0;
    std::size_t violations = 0;
    for (std::int64_t s = 1; s <= 300; ++s) {
      advance_ok(f, at_s(s));
      const bool burst = (s / 30) % 2 == 1;
      for (std::uint64_t i = burst ? rng.uniform(50, 150) : 0; i > 0; --i)
        (void)f.insert(element(rng.seed, next++));
      violations += f.past_filter_count() < 2 || f.past_filter_count() > 12 ? 1 : 0;
      violations += f.refresh_period() < 1s || f.refresh_period() > 8s ? 1 : 0;
      violations += f.window() < 3s ? 1 : 0;
    }
    BOOST_TEST(violations == 0u);
  }
}

// fbf_max_id_lifetime() bounds how long any id stays a member, through
// scale-ups, scale-downs, early and postponed refreshes: a partition keeps
// each id's exact record that long (docs/NODE.md, "Checkpoints"). Tracked
// ids are probed every 10 ms under a load that rises and falls; with 2^20
// bits the FBF has no false positive at these loads (model below 1e-9), so
// a hit is the id, and a tiny target makes the heavy phases scale up and
// the light ones scale down.
BOOST_AUTO_TEST_CASE(no_id_outlives_fbf_max_id_lifetime_under_adaptation) {
  tally::test::seeded_rng rng;
  for (auto cfg : {adaptive(2, 200ms, 500ms, 1e-22, 1u << 20, 7),
                   adaptive(1, 1000ms, 1500ms, 1e-22, 1u << 20, 5)}) {
    cfg.min_refresh_period = cfg.refresh_period / 2;
    cfg.refresh_step = cfg.refresh_period / 2;
    cfg.max_refresh_period = cfg.refresh_period * 2;
    cfg.adapt_interval = 100ms;
    cfg.min_past_filters = cfg.past_filters;
    cfg.max_past_filters = cfg.past_filters * 3;
    auto f = make_fbf(cfg);
    const auto bound = fbf_max_id_lifetime(cfg);
    struct tracked { std::uint64_t id; std::int64_t at; };
    std::vector<tracked> ids;
    std::int64_t longest = 0;
    std::uint64_t salt_i = 0;
    std::size_t fewest = f.filter_count(), most = f.filter_count();
    double worst_fpp = 0.0;
    for (std::int64_t ms = 10; ms <= 60'000; ms += 10) {
      advance_ok(f, at_ms(ms));
      fewest = std::min(fewest, f.filter_count());
      most = std::max(most, f.filter_count());
      worst_fpp = std::max(worst_fpp, f.current_fpp());
      // Load phases of 5 s: heavy (scale-ups), light (scale-downs).
      const bool heavy = (ms / 5000) % 2 == 0;
      const int n = heavy ? static_cast<int>(rng.gen() % 40) : static_cast<int>(rng.gen() % 2);
      for (int i = 0; i < n; ++i)
        (void)f.insert(element(7, salt_i++));
      if (ms % 250 == 0) {
        const std::uint64_t id = element(99, static_cast<std::uint64_t>(ms));
        if (f.insert(id) == insert_outcome::inserted)
          ids.push_back({id, ms});
      }
      for (auto& t : ids)
        if (t.at >= 0 && f.contains(t.id))
          longest = std::max(longest, ms - t.at);
    }
    BOOST_TEST_MESSAGE("longest membership " << longest << " ms, bound "
                       << bound.count() << " ms; filters " << fewest << ".."
                       << most << ", highest modelled FPP " << worst_fpp);
    BOOST_TEST(most > cfg.past_filters + 2); // it scaled up
    BOOST_TEST(worst_fpp < 1e-8); // < 0.02 expected false hits in all
    BOOST_TEST(longest >= cfg.retry_timeout.count()); // ids live at least R
    BOOST_TEST(longest <= bound.count());
  }
}

BOOST_AUTO_TEST_SUITE_END()
