// DESIGN.md, "The partition actor": under a steady load with periodic
// checkpoints the journal stays bounded (AntidoteDB's never does: its issues
// #456/#457).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <vector>

#include "checkpoint/checkpoint_store.hpp"
#include "tests/journal/journal_test_support.hpp"

using namespace tally;
using tally::test::key;
using tally::test::open_ok;
using tally::test::options;
using tally::test::temp_dir;

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(journal_stays_flat_under_steady_load_with_periodic_checkpoints) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir dir;
    auto j = open_ok(options(dir.sub("p"), durability::none)).log;
    checkpoint_store cs{*j};
    constexpr int rounds = 200;
    constexpr std::uint64_t txs_per_round = 200;
    constexpr int keys = 100;
    std::uint64_t seq = 0;
    std::vector<std::int64_t> model(keys, 0);
    std::vector<std::uint64_t> records, bytes, file_bytes;
    std::uint64_t page = 0;
    for (int round = 0; round < rounds; ++round) {
      std::vector<journal_record> batch;
      for (std::uint64_t t = 0; t < txs_per_round; ++t) {
        ++seq;
        tx_id tx{1, seq};
        int k = static_cast<int>(rng.uniform(0, keys - 1));
        auto d = rng.uniform_signed(-10, 10);
        model[static_cast<std::size_t>(k)] += d;
        // Wall time: one transaction per microsecond.
        batch.push_back(test::update(tx, key(k), d, op_id{1, seq}));
        batch.push_back(test::commit(tx, seq, seq));
      }
      BOOST_REQUIRE(j->append(batch).has_value());
      // Checkpoint everything committed, but keep the last round's op ids
      // for the FBF (its window is one round long here).
      checkpoint_bounds b;
      b.checkpoint_time = vector_clock{{1, seq}};
      b.replicated_lsn = j->next_lsn() - 1;
      b.fbf_horizon_us = seq - txs_per_round + 1;
      auto r = cs.checkpoint(b);
      BOOST_REQUIRE_MESSAGE(r.has_value(), test::describe(r));
      auto st = j->stats();
      BOOST_REQUIRE(st.has_value());
      records.push_back(st->journal.entries);
      bytes.push_back(st->journal.bytes() + st->index.bytes());
      file_bytes.push_back(st->env.used_bytes);
      page = st->env.page_size;
    }
    // The log holds one round (the FBF window) after each checkpoint.
    BOOST_TEST(*std::max_element(records.begin(), records.end())
               == 2 * txs_per_round);
    // Bytes and the file's high-water mark stop growing once LMDB reuses
    // the pages truncation frees: the second half of the run needs no more
    // pages than the first (the file may settle by a page or two while
    // LMDB's free list finds its size).
    const auto half = static_cast<std::ptrdiff_t>(rounds / 2);
    BOOST_TEST(*std::max_element(bytes.begin() + half, bytes.end())
               <= *std::max_element(bytes.begin(), bytes.begin() + half));
    BOOST_TEST(file_bytes.back()
               <= *std::max_element(file_bytes.begin(), file_bytes.begin() + half)
                    + 2 * page);
    BOOST_TEST_MESSAGE("journal+index bytes after round 20: "
                       << bytes[19] << ", after round " << rounds << ": "
                       << bytes.back() << "; file high-water mark "
                       << file_bytes.back() << " bytes");
    for (int k = 0; k < keys; ++k) {
      auto image = cs.load(key(k));
      BOOST_REQUIRE(image.has_value());
      std::int64_t v = image->base
                         ? std::get<std::int64_t>(image->base->object.value())
                         : 0;
      BOOST_TEST(v + test::sum(image->effects) == model[static_cast<std::size_t>(k)]);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
