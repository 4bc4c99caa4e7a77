#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/segmented_lru.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

using slru = segmented_lru<int, int>;

slru make_cache(std::size_t segments, std::size_t per_segment,
                std::vector<int>* evicted = nullptr) {
  slru::eviction_listener listener;
  if (evicted)
    listener = [evicted](const int& k, int&) { evicted->push_back(k); };
  auto c = slru::make({segments, per_segment}, listener);
  BOOST_REQUIRE(c.has_value());
  return std::move(*c);
}

// The policy written as plainly as possible: segments as vectors of keys,
// linear search, rotation empties the tail (head + 1).
struct reference_slru {
  std::size_t per_segment;
  std::vector<std::vector<int>> segments;
  std::size_t head = 0;
  std::map<int, int> values;
  std::vector<int> last_evicted; // keys evicted by the last operation, sorted
  slru::counters counters;

  reference_slru(std::size_t n, std::size_t per)
      : per_segment(per), segments(n) {}

  std::optional<std::size_t> segment_of(int key) const {
    for (std::size_t s = 0; s < segments.size(); ++s)
      if (std::find(segments[s].begin(), segments[s].end(), key)
          != segments[s].end())
        return s;
    return std::nullopt;
  }

  void remove_from(std::size_t s, int key) {
    auto& seg = segments[s];
    seg.erase(std::find(seg.begin(), seg.end(), key));
  }

  void rotate() {
    std::size_t tail = (head + 1) % segments.size();
    for (int k : segments[tail]) {
      values.erase(k);
      last_evicted.push_back(k);
      ++counters.evictions;
    }
    segments[tail].clear();
    head = tail;
    ++counters.rotations;
  }

  void to_head(int key) {
    auto s = *segment_of(key);
    if (s == head)
      return;
    remove_from(s, key);
    if (segments[head].size() == per_segment)
      rotate();
    segments[head].push_back(key);
    ++counters.promotions;
  }

  std::optional<int> find(int key) {
    last_evicted.clear();
    if (!values.count(key)) {
      ++counters.misses;
      return std::nullopt;
    }
    ++counters.hits;
    to_head(key);
    std::sort(last_evicted.begin(), last_evicted.end());
    return values.at(key);
  }

  void insert(int key, int value) {
    last_evicted.clear();
    if (values.count(key)) {
      values[key] = value;
      to_head(key);
    } else {
      if (segments[head].size() == per_segment)
        rotate();
      segments[head].push_back(key);
      values[key] = value;
    }
    std::sort(last_evicted.begin(), last_evicted.end());
  }

  bool erase(int key) {
    auto s = segment_of(key);
    if (!s)
      return false;
    remove_from(*s, key);
    values.erase(key);
    return true;
  }

  std::size_t age_of(int key) const {
    auto n = segments.size();
    return (head + n - *segment_of(key)) % n;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cache)

BOOST_AUTO_TEST_CASE(slru_rejects_zero_segments_or_zero_segment_size) {
  BOOST_TEST(slru::make({0, 4}).err().code() == errc::bad_config);
  BOOST_TEST(slru::make({4, 0}).err().code() == errc::bad_config);
  BOOST_TEST(slru::make({2, ~std::size_t{0}}).err().code() == errc::bad_config);
  BOOST_TEST(slru::make({1, 1}).has_value());
}

BOOST_AUTO_TEST_CASE(slru_counts_hits_and_misses) {
  auto c = make_cache(2, 2);
  c.insert(1, 10);
  BOOST_TEST(c.find(2) == nullptr);
  BOOST_REQUIRE(c.find(1) != nullptr);
  BOOST_TEST(*c.find(1) == 10);
  BOOST_TEST(c.stats().hits == 2u);
  BOOST_TEST(c.stats().misses == 1u);
  // peek and contains neither count nor promote.
  BOOST_TEST(*c.peek(1) == 10);
  BOOST_TEST(c.contains(1));
  BOOST_TEST(c.stats().hits == 2u);
}

BOOST_AUTO_TEST_CASE(slru_inserts_at_head_segment) {
  auto c = make_cache(3, 2);
  c.insert(1, 1);
  c.insert(2, 2);
  BOOST_TEST(*c.age_of(1) == 0u);
  BOOST_TEST(*c.age_of(2) == 0u);
  c.insert(3, 3); // head full: the (empty) tail becomes the head
  BOOST_TEST(*c.age_of(3) == 0u);
  BOOST_TEST(*c.age_of(1) == 1u);
  BOOST_TEST(c.stats().evictions == 0u);
  BOOST_TEST(c.stats().rotations == 1u);
}

BOOST_AUTO_TEST_CASE(slru_hit_in_older_segment_promotes_to_head) {
  auto c = make_cache(3, 2);
  c.insert(1, 1);
  c.insert(2, 2);
  c.insert(3, 3);
  BOOST_TEST(*c.age_of(1) == 1u);
  BOOST_REQUIRE(c.find(1) != nullptr);
  BOOST_TEST(*c.age_of(1) == 0u);
  BOOST_TEST(*c.age_of(2) == 1u);
  BOOST_TEST(c.stats().promotions == 1u);
  BOOST_TEST(c.segment_size(0) == 2u);
  BOOST_TEST(c.segment_size(1) == 1u);
}

BOOST_AUTO_TEST_CASE(slru_hit_in_head_segment_does_not_move_the_entry) {
  auto c = make_cache(2, 4);
  c.insert(1, 1);
  BOOST_REQUIRE(c.find(1) != nullptr);
  BOOST_TEST(c.stats().promotions == 0u);
  BOOST_TEST(c.segment_size(0) == 1u);
}

BOOST_AUTO_TEST_CASE(slru_full_head_evicts_whole_tail_segment_at_once) {
  std::vector<int> evicted;
  auto c = make_cache(3, 2, &evicted);
  for (int k = 1; k <= 6; ++k) // segments: {5,6} {3,4} {1,2}
    c.insert(k, k);
  BOOST_TEST(evicted.empty());
  BOOST_TEST(c.size() == 6u);
  c.insert(7, 7); // the tail {1,2} goes, both at once
  std::sort(evicted.begin(), evicted.end());
  BOOST_TEST(evicted == (std::vector<int>{1, 2}));
  BOOST_TEST(!c.contains(1));
  BOOST_TEST(!c.contains(2));
  BOOST_TEST(*c.age_of(7) == 0u);
  BOOST_TEST(*c.age_of(5) == 1u);
  BOOST_TEST(*c.age_of(3) == 2u);
  BOOST_TEST(c.stats().evictions == 2u);
  evicted.clear();
  c.insert(8, 8);
  c.insert(9, 9); // next tail: {3,4}
  std::sort(evicted.begin(), evicted.end());
  BOOST_TEST(evicted == (std::vector<int>{3, 4}));
}

BOOST_AUTO_TEST_CASE(slru_promoted_entry_escapes_the_tail_before_it_is_evicted) {
  std::vector<int> evicted;
  auto c = make_cache(3, 2, &evicted);
  for (int k = 1; k <= 6; ++k) // tail {1,2}, head {5,6} full
    c.insert(k, k);
  BOOST_REQUIRE(c.find(1) != nullptr); // promotion into a full head rotates
  BOOST_TEST(evicted == (std::vector<int>{2}));
  BOOST_TEST(*c.age_of(1) == 0u);
  BOOST_TEST(c.size() == 5u);
}

BOOST_AUTO_TEST_CASE(slru_reinsert_replaces_value_and_moves_to_head) {
  auto c = make_cache(2, 1);
  c.insert(1, 1);
  c.insert(2, 2);
  BOOST_TEST(*c.age_of(1) == 1u);
  c.insert(1, 100); // promotion: the head {2} is full, the tail was {1}
  BOOST_TEST(*c.peek(1) == 100);
  BOOST_TEST(*c.age_of(1) == 0u);
  BOOST_TEST(*c.age_of(2) == 1u);
  BOOST_TEST(c.size() == 2u);
  BOOST_TEST(c.stats().evictions == 0u);
}

BOOST_AUTO_TEST_CASE(slru_single_segment_flushes_everything_when_full) {
  std::vector<int> evicted;
  auto c = make_cache(1, 3, &evicted);
  for (int k = 1; k <= 3; ++k)
    c.insert(k, k);
  c.insert(4, 4);
  std::sort(evicted.begin(), evicted.end());
  BOOST_TEST(evicted == (std::vector<int>{1, 2, 3}));
  BOOST_TEST(c.size() == 1u);
  BOOST_TEST(*c.age_of(4) == 0u);
}

BOOST_AUTO_TEST_CASE(slru_erase_removes_without_counting_an_eviction) {
  std::vector<int> evicted;
  auto c = make_cache(2, 2, &evicted);
  c.insert(1, 1);
  BOOST_TEST(c.erase(1));
  BOOST_TEST(!c.erase(1));
  BOOST_TEST(!c.contains(1));
  BOOST_TEST(evicted.empty());
  BOOST_TEST(c.stats().evictions == 0u);
  BOOST_TEST(c.segment_size(0) == 0u);
}

BOOST_AUTO_TEST_CASE(slru_keeps_working_after_a_move) {
  auto a = make_cache(2, 2);
  for (int k = 1; k <= 4; ++k)
    a.insert(k, k);
  slru b = std::move(a);
  // Promoting 1 out of the tail {1,2} into the full head {3,4} evicts 2.
  BOOST_REQUIRE(b.find(1) != nullptr);
  b.insert(5, 5); // joins 1 in the head
  BOOST_TEST(b.size() == 4u);
  BOOST_TEST(!b.contains(2));
  BOOST_TEST(*b.age_of(5) == 0u);
  BOOST_TEST(*b.age_of(3) == 1u);
}

BOOST_AUTO_TEST_CASE(slru_matches_reference_model_on_random_operations) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 40; ++round) {
      std::size_t segments = rng.uniform(1, 5);
      std::size_t per = rng.uniform(1, 6);
      int key_space = static_cast<int>(rng.uniform(1, 3 * segments * per + 2));
      std::vector<int> evicted;
      auto c = make_cache(segments, per, &evicted);
      reference_slru ref{segments, per};
      for (int step = 0; step < 400; ++step) {
        int key = static_cast<int>(rng.uniform(0, key_space - 1));
        evicted.clear();
        double op = rng.unit();
        if (op < 0.45) {
          int* got = c.find(key);
          auto want = ref.find(key);
          BOOST_REQUIRE_EQUAL(got != nullptr, want.has_value());
          if (got)
            BOOST_REQUIRE_EQUAL(*got, *want);
        } else if (op < 0.9) {
          int value = static_cast<int>(rng.uniform(0, 1000));
          BOOST_REQUIRE_EQUAL(c.insert(key, value), value);
          ref.insert(key, value);
        } else {
          BOOST_REQUIRE_EQUAL(c.erase(key), ref.erase(key));
          ref.last_evicted.clear();
        }
        std::sort(evicted.begin(), evicted.end());
        BOOST_REQUIRE(evicted == ref.last_evicted);
        BOOST_REQUIRE_EQUAL(c.size(), ref.values.size());
        BOOST_REQUIRE(c.size() <= c.capacity());
        for (std::size_t age = 0; age < segments; ++age)
          BOOST_REQUIRE(c.segment_size(age) <= per);
        for (const auto& [k, v] : ref.values) {
          BOOST_REQUIRE(c.peek(k) != nullptr);
          BOOST_REQUIRE_EQUAL(*c.peek(k), v);
          BOOST_REQUIRE_EQUAL(*c.age_of(k), ref.age_of(k));
        }
        BOOST_REQUIRE_EQUAL(c.stats().hits, ref.counters.hits);
        BOOST_REQUIRE_EQUAL(c.stats().misses, ref.counters.misses);
        BOOST_REQUIRE_EQUAL(c.stats().evictions, ref.counters.evictions);
        BOOST_REQUIRE_EQUAL(c.stats().promotions, ref.counters.promotions);
        BOOST_REQUIRE_EQUAL(c.stats().rotations, ref.counters.rotations);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
