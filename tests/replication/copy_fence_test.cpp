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

namespace {

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
            bool met = false;
            for (auto c : b.on)
              met = met || promised.count(c) != 0;
            BOOST_TEST_REQUIRE(met, "trial " << trial << " step " << step
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

BOOST_AUTO_TEST_SUITE_END()
