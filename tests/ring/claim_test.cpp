#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "ring/claim.hpp"
#include "tests/ring/ring_checks.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using tally::test::balance_problem;
using tally::test::grow_ring;
using tally::test::owned_by;
using tally::test::random_nodes;

namespace {

// Ring sizes the property tests draw from: {8, 16, ..., 1024}.
std::uint32_t random_ring_size(test::seeded_rng& rng, std::uint32_t largest = 1024) {
  std::uint32_t q = 8u << rng.uniform(0, 7);
  return std::min(q, largest);
}

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

// Whether some balanced table of q partitions over `nodes` members has every
// window of n = effective_n_val distinct, by enumerating all nodes^q tables.
bool some_balanced_table_is_distinct(std::uint32_t q, std::uint32_t nodes,
                                     std::uint32_t n_val) {
  const auto n = effective_n_val(q, nodes, n_val);
  std::vector<std::uint32_t> t(q, 0);
  for (;;) {
    std::vector<std::uint32_t> count(nodes, 0);
    for (auto o : t)
      ++count[o];
    const bool balanced = std::all_of(count.begin(), count.end(), [&](std::uint32_t c) {
      return c >= q / nodes && c <= ceil_div(q, nodes);
    });
    bool distinct = balanced;
    for (std::uint32_t i = 0; i < q && distinct; ++i)
      for (std::uint32_t d = 1; d < n && distinct; ++d)
        distinct = t[i] != t[(i + d) % q];
    if (distinct)
      return true;
    std::uint32_t i = 0;
    while (i < q && ++t[i] == nodes)
      t[i++] = 0;
    if (i == q)
      return false;
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(ring)

BOOST_AUTO_TEST_CASE(effective_n_val_is_capped_by_node_count_and_ring_size) {
  BOOST_TEST(effective_n_val(64, 5, 3) == 3u);
  BOOST_TEST(effective_n_val(64, 2, 3) == 2u);
  BOOST_TEST(effective_n_val(64, 1, 3) == 1u);
  BOOST_TEST(effective_n_val(2, 5, 3) == 2u);
}

BOOST_AUTO_TEST_CASE(distinctness_guarantee_covers_the_documented_cases) {
  BOOST_TEST(!distinctness_guaranteed(64, 3, 3)); // 3 does not divide 64
  BOOST_TEST(distinctness_guaranteed(64, 4, 3));
  BOOST_TEST(distinctness_guaranteed(64, 2, 3)); // n capped to 2
  BOOST_TEST(distinctness_guaranteed(64, 4, 4));
  BOOST_TEST(!distinctness_guaranteed(8, 7, 6)); // 2 * 6 > 8
  for (std::uint32_t q = 1; q <= 1024; q *= 2)
    for (std::uint32_t nodes = 1; nodes <= q + 2; ++nodes)
      for (std::uint32_t n = 1; n <= 6; ++n) {
        BOOST_TEST_CONTEXT("q=" << q << " nodes=" << nodes << " n_val=" << n) {
          if (nodes == n && q % n == 0)
            BOOST_TEST(distinctness_guaranteed(q, nodes, n));
          if (nodes >= n + 1 && q >= nodes && (n <= 3 || q >= n * n))
            BOOST_TEST(distinctness_guaranteed(q, nodes, n));
          if (nodes >= q)
            BOOST_TEST(distinctness_guaranteed(q, nodes, n));
        }
      }
}

BOOST_AUTO_TEST_CASE(distinctness_guarantee_is_exactly_when_a_balanced_table_exists) {
  // Brute force over every table: outside the guarantee no balanced table is
  // distinct (e.g. 3 nodes on 8 partitions, n_val 3), inside one is.
  for (std::uint32_t q : {2u, 4u, 8u})
    for (std::uint32_t nodes = 1; nodes <= 5; ++nodes)
      for (std::uint32_t n = 1; n <= 5; ++n)
        BOOST_TEST(some_balanced_table_is_distinct(q, nodes, n)
                     == distinctness_guaranteed(q, nodes, n),
                   "q=" << q << " nodes=" << nodes << " n_val=" << n);
}

BOOST_AUTO_TEST_CASE(window_violations_counts_windows_that_repeat_an_owner) {
  const owner_table t{"a", "b", "a", "c"};
  BOOST_TEST(window_violations(t, 3) == 2u); // (a b a) and, wrapping, (a c a)
  BOOST_TEST(window_violations(t, 2) == 0u);
  BOOST_TEST(window_violations(t, 1) == 0u);
  BOOST_TEST(window_violations(owner_table{"a", "b", "c", "a"}, 2) == 1u); // wraps
}

BOOST_AUTO_TEST_CASE(balance_check_catches_non_members_and_uneven_counts) {
  BOOST_TEST(balance_problem({"a", "b", "a", "b"}, {"a", "b"}).empty());
  BOOST_TEST(!balance_problem({"a", "a", "a", "b"}, {"a", "b"}).empty());
  BOOST_TEST(!balance_problem({"a", "b", "a", "x"}, {"a", "b"}).empty());
  BOOST_TEST(!balance_problem({"a", "a", "a", "a"}, {"a", "b"}).empty());
}

BOOST_AUTO_TEST_CASE(moves_are_exactly_the_partitions_whose_owner_changed) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      const auto q = random_ring_size(rng, 64);
      const auto nodes = random_nodes(rng, rng.uniform(1, 6));
      owner_table before(q), after(q);
      for (std::uint32_t p = 0; p < q; ++p) {
        before[p] = nodes[rng.uniform(0, nodes.size() - 1)];
        after[p] = nodes[rng.uniform(0, nodes.size() - 1)];
      }
      const auto m = moves(before, after);
      std::size_t differ = 0;
      for (std::uint32_t p = 0; p < q; ++p)
        differ += before[p] != after[p];
      BOOST_TEST(m.size() == differ);
      owner_table replay = before;
      for (std::size_t i = 0; i < m.size(); ++i) {
        BOOST_TEST(replay[m[i].partition] == m[i].from);
        BOOST_TEST(m[i].from != m[i].to);
        if (i > 0)
          BOOST_TEST(m[i - 1].partition < m[i].partition);
        replay[m[i].partition] = m[i].to;
      }
      BOOST_TEST((replay == after));
    }
  }
}

BOOST_AUTO_TEST_CASE(claim_rejects_bad_arguments) {
  const owner_table t(8, "a");
  for (auto r : {claim_ownership(owner_table{}, {"a"}, 3),
                 claim_ownership(owner_table(6, "a"), {"a"}, 3),
                 claim_ownership(owner_table(65537, "a"), {"a"}, 3),
                 claim_ownership(t, {}, 3), claim_ownership(t, {"a", ""}, 3),
                 claim_ownership(t, {"a"}, 0)}) {
    BOOST_TEST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::invalid_argument);
  }
}

BOOST_AUTO_TEST_CASE(claim_is_balanced_always_and_distinct_whenever_guaranteed) {
  // From a founder owning everything, and from a table no member owns.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 150; ++round) {
      const auto q = random_ring_size(rng, 256);
      const auto n_val = static_cast<std::uint32_t>(rng.uniform(1, 5));
      const auto nodes = random_nodes(rng, rng.uniform(1, std::min<std::uint32_t>(q + 3, 24)));
      const owner_table start(q, rng.chance(0.5) ? nodes.front() : "tally@gone:1");
      BOOST_TEST_CONTEXT("q=" << q << " nodes=" << nodes.size() << " n_val=" << n_val) {
        auto t = claim_ownership(start, nodes, n_val);
        BOOST_TEST_REQUIRE(t.has_value());
        BOOST_TEST(balance_problem(*t, nodes) == "");
        if (distinctness_guaranteed(q, nodes.size(), n_val))
          BOOST_TEST(window_violations(*t, effective_n_val(q, nodes.size(), n_val)) == 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(claim_is_deterministic_whatever_the_member_order) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 20; ++round) {
      const auto q = random_ring_size(rng, 256);
      const auto nodes = random_nodes(rng, rng.uniform(2, 12));
      const auto grown = grow_ring(nodes, q, 3);
      auto members = nodes;
      members.push_back("tally@10.9.9.9:9100");
      const auto a = claim_ownership(grown.back(), members, 3);
      std::reverse(members.begin(), members.end());
      members.push_back(members.front()); // a duplicate changes nothing
      const auto b = claim_ownership(grown.back(), members, 3);
      BOOST_TEST((*a == *b));
      BOOST_TEST((*claim_ownership(grown.back(), members, 3) == *a));
    }
  }
}

BOOST_AUTO_TEST_CASE(claim_of_a_settled_ring_moves_nothing) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 20; ++round) {
      const auto q = random_ring_size(rng, 256);
      const auto n_val = static_cast<std::uint32_t>(rng.uniform(1, 4));
      const auto nodes = random_nodes(rng, rng.uniform(1, 12));
      const auto grown = grow_ring(nodes, q, n_val);
      BOOST_TEST(moves(grown.back(), *claim_ownership(grown.back(), nodes, n_val)).empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(join_moves_at_most_ceil_q_over_n_plus_two_partitions) {
  // docs/RING.md, "Movement": a join between two rings where distinctness
  // is guaranteed moves the newcomer's share and at most 2 more (measured:
  // 0 for n_val <= 4, 1 for n_val = 5), and leaves the ring valid.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 40; ++round) {
      const auto n_val = static_cast<std::uint32_t>(rng.uniform(1, 5));
      const auto q = random_ring_size(rng, n_val <= 3 ? 1024 : 256);
      const auto nodes = random_nodes(rng, rng.uniform(2, std::min<std::uint32_t>(q, 24)));
      const auto grown = grow_ring(nodes, q, n_val);
      for (std::size_t i = 1; i < grown.size(); ++i) {
        const auto n = static_cast<std::uint32_t>(i + 1); // members after the join
        const std::vector<node_id> members(nodes.begin(), nodes.begin() + n);
        BOOST_TEST_CONTEXT("q=" << q << " n_val=" << n_val << " join of member " << n) {
          BOOST_TEST(balance_problem(grown[i], members) == "");
          if (!distinctness_guaranteed(q, n, n_val))
            continue;
          BOOST_TEST(window_violations(grown[i], effective_n_val(q, n, n_val)) == 0u);
          if (!distinctness_guaranteed(q, n - 1, n_val))
            continue;
          const auto moved = moves(grown[i - 1], grown[i]).size();
          BOOST_TEST(moved >= q / n); // the newcomer's share
          BOOST_TEST(moved <= ceil_div(q, n) + 2);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(join_of_a_fourth_node_repairs_a_best_effort_ring_within_the_join_bound) {
  // With n_val 3, three nodes on a power-of-two ring cannot be distinct; the
  // fourth join must restore distinctness without a reshuffle.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 12; ++round) {
      const auto q = random_ring_size(rng);
      const auto nodes = random_nodes(rng, 4);
      const auto grown = grow_ring(nodes, q, 3);
      BOOST_TEST_CONTEXT("q=" << q) {
        BOOST_TEST(window_violations(grown[3], 3) == 0u);
        BOOST_TEST(moves(grown[2], grown[3]).size() <= ceil_div(q, 4) + 2);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(best_effort_claim_is_balanced_and_moves_only_what_balance_requires) {
  // Q = 64, 3 nodes, n_val 3: distinctness is impossible (docs/RING.md).
  const auto grown = grow_ring({"a", "b", "c"}, 64, 3);
  BOOST_TEST(balance_problem(grown[2], {"a", "b", "c"}) == "");
  BOOST_TEST(window_violations(grown[2], 3) > 0u);
  BOOST_TEST(moves(grown[1], grown[2]).size() == 21u); // c's share, floor(64/3)
}

BOOST_AUTO_TEST_CASE(leave_moves_at_most_twice_the_leavers_partitions_plus_two) {
  // docs/RING.md, "Movement", for n_val <= 3 between guaranteed rings: the
  // leaver's partitions move, plus at most as many again and 2 (measured:
  // at most owned + 1 extra, usually 0 to 2); the ring stays valid.
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 40; ++round) {
      const auto n_val = static_cast<std::uint32_t>(rng.uniform(1, 3));
      const auto q = random_ring_size(rng);
      const auto nodes = random_nodes(rng, rng.uniform(3, std::min<std::uint32_t>(q, 16)));
      const auto table = grow_ring(nodes, q, n_val).back();
      const auto n = static_cast<std::uint32_t>(nodes.size());
      if (!distinctness_guaranteed(q, n, n_val) || !distinctness_guaranteed(q, n - 1, n_val))
        continue;
      auto rest = nodes;
      const auto leaver = rest[rng.uniform(0, n - 1)];
      rest.erase(std::find(rest.begin(), rest.end(), leaver));
      BOOST_TEST_CONTEXT("q=" << q << " n_val=" << n_val << " nodes " << n << " -> " << n - 1) {
        const auto after = *claim_ownership(table, rest, n_val);
        BOOST_TEST(balance_problem(after, rest) == "");
        BOOST_TEST(window_violations(after, effective_n_val(q, n - 1, n_val)) == 0u);
        const auto owned = owned_by(table, leaver);
        const auto moved = moves(table, after).size();
        BOOST_TEST(moved >= owned);
        BOOST_TEST(moved <= 2 * owned + 2);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(more_nodes_than_partitions_own_at_most_one_each) {
  const auto nodes = std::vector<node_id>{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"};
  const auto t = *claim_ownership(owner_table(8, "a"), nodes, 3);
  BOOST_TEST(balance_problem(t, nodes) == "");
  BOOST_TEST(window_violations(t, 3) == 0u);
  for (const auto& n : nodes)
    BOOST_TEST(owned_by(t, n) <= 1u);
}

BOOST_AUTO_TEST_SUITE_END()
