// replication/copy_fence.hpp: promises only to rising terms, batches of a
// lower term refused, a failed round's own promise taken back, and the
// property the failover relies on (no split brain): with n copies and write
// quorum w, once a take-over round under term T has the promises of n - w + 1
// copies, no batch of a lower term reaches w copies, and every batch of a
// lower term that had reached w copies is on a copy that promised T.
// Checked on random interleavings of rounds and batches (seed printed).
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "replication/copy_fence.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::test;

BOOST_AUTO_TEST_SUITE(copy_fence_tests)

BOOST_AUTO_TEST_CASE(terms_order_by_number_then_by_node) {
  BOOST_TEST((copy_term{1, "b"} < copy_term{2, "a"}));
  BOOST_TEST((copy_term{2, "a"} < copy_term{2, "b"}));
  BOOST_TEST(!(copy_term{2, "b"} < copy_term{2, "b"}));
  BOOST_TEST((copy_term{} < copy_term{1, ""}));
}

BOOST_AUTO_TEST_CASE(a_copy_promises_only_rising_terms_and_refuses_lower_batches) {
  copy_fence f;
  BOOST_TEST(f.admits(copy_term{1, "a"})); // nothing promised yet
  BOOST_TEST(f.promise(copy_term{5, "b"}));
  BOOST_TEST(!f.promise(copy_term{5, "b"})); // once per term
  BOOST_TEST(!f.promise(copy_term{4, "c"}));
  BOOST_TEST(!f.admits(copy_term{1, "a"})); // the old primary's batches
  BOOST_TEST(!f.admits(copy_term{5, "a"}));
  BOOST_TEST(f.admits(copy_term{5, "b"})); // the new primary's
  BOOST_TEST(f.admits(copy_term{6, "a"}));  // a later one's raises the promise
  BOOST_TEST((f.promised() == copy_term{6, "a"}));
  BOOST_TEST(!f.promise(copy_term{5, "z"}));
}

BOOST_AUTO_TEST_CASE(a_new_round_is_above_every_term_seen_and_the_clock) {
  copy_fence f;
  f.saw(copy_term{100, "x"});
  auto t = f.start_round("me", 50);
  BOOST_TEST((t == copy_term{101, "me"}));
  BOOST_TEST((f.promised() == t)); // the promoter promises its own round
  BOOST_TEST(!f.admits(copy_term{100, "x"}));
  auto u = f.start_round("me", 5000);
  BOOST_TEST((u == copy_term{5000, "me"}));
}

BOOST_AUTO_TEST_CASE(a_failed_round_takes_its_own_promise_back) {
  copy_fence f;
  BOOST_TEST(f.promise(copy_term{10, "p"})); // follows primary p
  auto t = f.start_round("me", 0);
  BOOST_TEST(!f.admits(copy_term{10, "p"}));
  f.abandon_round(t); // too few promises: p still leads
  BOOST_TEST(f.admits(copy_term{10, "p"}));
  // Not when a higher term was promised since.
  auto u = f.start_round("me", 0);
  BOOST_TEST(f.promise(copy_term{u.n + 1, "q"}));
  f.abandon_round(u);
  BOOST_TEST(!f.admits(copy_term{10, "p"}));
}

// Epochs (docs/REPLICATION.md, "Rounds across two copy sets"): once a copy
// promised a round of a newer view, rounds and batches of an older view are
// refused whatever their terms; a copy whose own view is behind may not
// lead; a failed round takes its epoch back with its promise; the epoch
// outlives a restart.
BOOST_AUTO_TEST_CASE(a_copy_that_promised_a_newer_view_refuses_older_views_whatever_their_terms) {
  copy_fence f;
  BOOST_TEST(f.promise(copy_term{5, "a"}, 2));
  BOOST_TEST(f.promised_epoch() == 2u);
  BOOST_TEST(!f.promise(copy_term{100, "c"}, 1)); // a higher term, an older view
  BOOST_TEST(!f.admits(copy_term{100, "c"}, 1));
  BOOST_TEST((f.promised() == copy_term{5, "a"}));
  BOOST_TEST(f.admits(copy_term{5, "a"}, 2));
  BOOST_TEST(f.admits(copy_term{6, "a"}, 3)); // a batch of a newer view raises it
  BOOST_TEST(f.promised_epoch() == 3u);
  BOOST_TEST(!f.promise(copy_term{7, "b"}, 2));
  BOOST_TEST(f.promise(copy_term{7, "b"}, 3));
  BOOST_TEST(!f.may_lead_in(2));
  BOOST_TEST(f.may_lead_in(3));
  BOOST_TEST(f.may_lead_in(4));

  copy_fence g; // after a restart
  g.restore(copy_term{7, "b"}, copy_term{6, "a"}, 3);
  BOOST_TEST(!g.promise(copy_term{100, "c"}, 2));
  BOOST_TEST(g.promise(copy_term{100, "c"}, 3));
}

BOOST_AUTO_TEST_CASE(a_round_carries_its_views_epoch_and_a_failed_one_takes_it_back) {
  copy_fence f;
  BOOST_TEST(f.promise(copy_term{10, "p"}, 1)); // follows primary p, view 1
  auto t = f.start_round("me", 0, 2);
  BOOST_TEST(f.promised_epoch() == 2u);
  BOOST_TEST(!f.admits(copy_term{10, "p"}, 1));
  f.abandon_round(t); // too few promises: p still leads, in view 1
  BOOST_TEST(f.promised_epoch() == 1u);
  BOOST_TEST(f.admits(copy_term{10, "p"}, 1));
  // A round of an older view than the one promised keeps the newer epoch.
  BOOST_TEST(f.promise(copy_term{20, "q"}, 5));
  auto u = f.start_round("me", 0, 4); // (the caller checks may_lead_in first)
  BOOST_TEST(f.promised_epoch() == 5u);
  f.abandon_round(u);
  BOOST_TEST(f.promised_epoch() == 5u);
}

// A handoff's fence (docs/REPLICATION.md, "Handoffs across two copy
// sets"): a copy that refuses the round's term still takes its epoch, and
// from then on refuses older views' rounds and batches, but not its own
// primary's term in that view; a round of its own that fails keeps it.
BOOST_AUTO_TEST_CASE(a_raised_epoch_refuses_older_views_without_a_promise_of_a_term) {
  copy_fence f;
  BOOST_TEST(f.promise(copy_term{30, "d"}, 4)); // follows the new owner d, view 4
  BOOST_TEST(!f.promise(copy_term{20, "a"}, 4)); // the sender's fence: a lower term
  f.raise_epoch(4);
  BOOST_TEST(f.promised_epoch() == 4u);
  BOOST_TEST((f.promised() == copy_term{30, "d"})); // no term promised to a
  BOOST_TEST(f.admits(copy_term{30, "d"}, 4));
  BOOST_TEST(!f.promise(copy_term{1'000'000, "b"}, 3)); // the old view, whatever the term
  BOOST_TEST(!f.admits(copy_term{1'000'000, "b"}, 3));

  copy_fence g;
  BOOST_TEST(g.promise(copy_term{10, "p"}, 1));
  auto t = g.start_round("me", 0, 1);
  g.raise_epoch(2); // during its own round of view 1
  g.abandon_round(t);
  BOOST_TEST(g.promised_epoch() == 2u);
  BOOST_TEST(!g.admits(copy_term{10, "p"}, 1));
}

namespace {

// Whether two sets of copies meet (a batch's copies and a round's
// promisers).
bool meet(const std::set<std::size_t>& a, const std::set<std::size_t>& b) {
  for (auto c : a)
    if (b.count(c) != 0)
      return true;
  return false;
}

// One acknowledged batch: its term, and the copies that took it.
struct acked_batch {
  copy_term term;
  std::set<std::size_t> on;
};

} // namespace

// The model: n copies, each a copy_fence. A step is either a take-over
// round (a random promoter asks a random subset; it leads if n - w copies
// besides itself promised) or a batch of a random leader's term sent to a
// random subset (acknowledged if w copies took it). Leaders include stale
// ones: every term that ever led may keep sending. Checked at every round
// that leads: no batch of a lower term is acknowledged after it (by
// construction of the check below, the batch would need a fenced copy), and
// every batch of a lower term acknowledged before it is on a copy that
// promised (the promoter pulls the longest answer, so it gets it).
BOOST_AUTO_TEST_CASE(no_batch_of_an_older_term_reaches_w_copies_after_a_round) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int trial = 0; trial < 200; ++trial) {
      const std::size_t n = 3 + rng.uniform(0, 2); // 3, 4 or 5 copies
      const std::size_t w = n / 2 + 1;             // a majority
      std::vector<copy_fence> copies(n);
      std::vector<copy_term> leaders;              // terms that led
      std::vector<acked_batch> acked;
      std::vector<copy_term> rounds;               // terms whose round led
      std::uint64_t clock = 0;
      for (int step = 0; step < 200; ++step) {
        if (leaders.empty() || rng.chance(0.3)) {
          const auto promoter = rng.uniform(0, n - 1);
          const auto t = copies[promoter].start_round("n" + std::to_string(promoter),
                                                      clock += rng.uniform(0, 2));
          std::set<std::size_t> promised{promoter};
          for (std::size_t c = 0; c < n; ++c)
            if (c != promoter && rng.chance(0.6) && copies[c].promise(t))
              promised.insert(c);
          if (promised.size() < n - w + 1) {
            copies[promoter].abandon_round(t);
            continue;
          }
          // Every batch of a lower term acknowledged so far is on a copy
          // that promised (and that copy had it before it promised).
          for (const auto& b : acked) {
            if (!(b.term < t))
              continue;
            BOOST_TEST_REQUIRE(meet(b.on, promised), "trial " << trial << " step " << step
                                               << ": an acknowledged batch of term "
                                               << b.term.to_string()
                                               << " is on no copy that promised "
                                               << t.to_string());
          }
          leaders.push_back(t);
          rounds.push_back(t);
        } else {
          const auto& t = leaders[rng.uniform(0, leaders.size() - 1)];
          acked_batch b{t, {}};
          for (std::size_t c = 0; c < n; ++c)
            if (rng.chance(0.8) && copies[c].admits(t))
              b.on.insert(c);
          if (b.on.size() < w)
            continue;
          // Acknowledged: no round of a higher term has led yet.
          for (const auto& r : rounds)
            BOOST_TEST_REQUIRE(!(t < r), "trial " << trial << " step " << step
                                                  << ": a batch of term " << t.to_string()
                                                  << " reached " << b.on.size()
                                                  << " copies after the round of "
                                                  << r.to_string() << " led");
          acked.push_back(std::move(b));
        }
      }
    }
  }
}

// The model of the test above across a change of copy set, as the
// partition runs it (docs/REPLICATION.md, "Rounds across two copy sets"):
// copies 0-3, w = 2; the old set {0, 1, 2} in view 1 and the new set
// {0, 1, 3} in view 2, copy 3 new (being filled: its promise counts only
// when both other copies of the new set promised). Any copy of a set may
// try to lead it in that set's view, whatever the other views: copies on
// the old view keep trying after the new view started, and primaries of
// either view keep sending batches to their set. Rounds of view 2 need
// promises from 2 copies of the new set not counting copy 3, so from
// copies 0 and 1, which are in the old set too. Checked at every round
// that leads: every batch acknowledged before it, of a lower term or an
// older view, is on a copy that promised; and at every acknowledged batch:
// no round of a higher term of the same view, and no round of a newer
// view, has led before it. Without epochs the second check fails: an old
// view's round with a higher term than the new view's gets copies 1 and 2.
BOOST_AUTO_TEST_CASE(no_batch_of_an_older_view_reaches_w_copies_after_a_round_of_a_newer_one) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    const std::vector<std::vector<std::size_t>> sets{{0, 1, 2}, {0, 1, 3}};
    constexpr std::size_t w = 2;
    struct led {
      copy_term term;
      std::uint64_t epoch; // 1 or 2: sets[epoch - 1]
    };
    struct acked_batch {
      led by;
      std::set<std::size_t> on;
    };
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<copy_fence> copies(4);
      std::vector<led> leaders, rounds;
      std::vector<acked_batch> acked;
      std::uint64_t clock = 0;
      bool new_view_started = false;
      for (int step = 0; step < 200; ++step) {
        if (leaders.empty() || rng.chance(0.3)) {
          // The new view starts at some point; the old one goes on.
          const std::uint64_t epoch = new_view_started && rng.chance(0.5) ? 2 : 1;
          new_view_started = new_view_started || rng.chance(0.1);
          const auto& set = sets[epoch - 1];
          const auto promoter = set[rng.uniform(0, set.size() - 1)];
          if (epoch == 2 && promoter == 3)
            continue; // being filled: it does not lead
          if (!copies[promoter].may_lead_in(epoch))
            continue;
          const auto t = copies[promoter].start_round("n" + std::to_string(promoter),
                                                      clock += rng.uniform(0, 2), epoch);
          std::set<std::size_t> promised{promoter};
          for (auto c : set)
            if (c != promoter && rng.chance(0.6) && copies[c].promise(t, epoch))
              promised.insert(c);
          std::size_t counted = 0;
          for (auto c : promised)
            counted += (epoch == 2 && c == 3) ? 0 : 1;
          if (counted < set.size() - w + 1 && promised.size() < set.size()) {
            copies[promoter].abandon_round(t);
            continue;
          }
          for (const auto& b : acked) {
            if (!(b.by.term < t) && b.by.epoch >= epoch)
              continue;
            BOOST_TEST_REQUIRE(meet(b.on, promised), "trial " << trial << " step " << step
                                               << ": an acknowledged batch of term "
                                               << b.by.term.to_string() << " (view "
                                               << b.by.epoch << ") is on no copy that promised "
                                               << t.to_string() << " (view " << epoch << ")");
          }
          leaders.push_back({t, epoch});
          rounds.push_back({t, epoch});
        } else {
          const auto by = leaders[rng.uniform(0, leaders.size() - 1)];
          acked_batch b{by, {}};
          for (auto c : sets[by.epoch - 1])
            if (rng.chance(0.8) && copies[c].admits(by.term, by.epoch))
              b.on.insert(c);
          if (b.on.size() < w)
            continue;
          for (const auto& r : rounds)
            BOOST_TEST_REQUIRE(!((r.epoch == by.epoch && by.term < r.term) || r.epoch > by.epoch),
                               "trial " << trial << " step " << step << ": a batch of term "
                                        << by.term.to_string() << " (view " << by.epoch
                                        << ") reached " << b.on.size() << " copies after the round of "
                                        << r.term.to_string() << " (view " << r.epoch << ") led");
          acked.push_back(std::move(b));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
