// partition_core as primary and replicas (docs/REPLICATION.md, "Log
// shipping"): the batches a primary flushes, applied by its replicas, give
// them the same journal (LSN for LSN), the same values, the same exactly-once
// state; a replica that missed batches catches up from records_from(); a
// replica takes over with everything it was sent. Driven directly with a
// controlled clock: no actors, no sleeps.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "actors/partition_core.hpp"

using namespace tally;

namespace {

struct copies {
  std::filesystem::path root;
  std::uint64_t now = 1'000'000;
  std::int64_t fbf_ms = 0;

  copies() {
    root = std::filesystem::temp_directory_path()
           / ("tally-replication-" + std::to_string(std::random_device{}()));
    std::filesystem::remove_all(root);
  }
  ~copies() { std::filesystem::remove_all(root); }

  partition_options options(const std::string& name, bool primary) {
    partition_options o;
    o.index = 5;
    o.path = (root / name).string();
    o.mode = durability::batch;
    o.keep_flushed = primary;
    o.now_us = [this] { return now; };
    o.now_fbf = [this] { return fbf_time{fbf_duration{fbf_ms}}; };
    return o;
  }

  std::unique_ptr<partition_core> open(const std::string& name, bool primary) {
    auto c = partition_core::open(options(name, primary));
    BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
    return std::move(*c);
  }
};

object_key key(int k) { return {"b", "k" + std::to_string(k)}; }

tx_update inc(int k, std::int64_t d, std::optional<op_id> id = {}) {
  return tx_update{key(k), crdt_type::counter, counter_effect{d}, id};
}

std::int64_t value_at(partition_core& c, int k, std::uint64_t t) {
  auto v = c.read(key(k), crdt_type::counter, vector_clock{{local_dc, t}}, {});
  BOOST_REQUIRE_MESSAGE(v, (v ? "" : v.err().to_string()));
  return std::get<std::int64_t>(*v);
}

// The exact prefix check of partition_replication (r_append): the record
// at `first - 1` of `r` is `p`'s.
std::function<bool()> prefix_of(partition_core& r, partition_core& p, lsn first) {
  return [&r, &p, first] {
    if (first <= 1)
      return true;
    auto mine = r.tx_at(first - 1);
    auto theirs = p.tx_at(first - 1);
    return mine && theirs && *mine == *theirs;
  };
}

// `r` checks `b`'s dependencies as a replica does (docs/REPLICATION.md,
// "Dependency check") and must find them applied.
void require_dependencies(partition_core& r, partition_core& p, const replication_batch& b) {
  auto v = r.check_dependencies(b, prefix_of(r, p, b.first));
  BOOST_REQUIRE_MESSAGE(v == dependency_verdict::apply,
                        "dependency check of the batch at " << b.first << ": " << to_string(v));
}

// Ships every batch the primary flushed to `r`; true when all applied.
void ship(partition_core& primary_core, std::vector<partition_core*> to) {
  for (auto& b : primary_core.take_flushed())
    for (auto* r : to) {
      require_dependencies(*r, primary_core, b);
      auto end = r->apply_replicated(b);
      BOOST_REQUIRE_MESSAGE(end, (end ? "" : end.err().to_string()));
      BOOST_TEST(*end == b.end());
    }
}

// Sends `r` what it misses of `from`'s journal, in slices of 3 records.
void catch_up(partition_core& from, partition_core& r) {
  while (r.log_end() < from.log_end()) {
    auto b = from.records_from(r.log_end(), 3);
    BOOST_REQUIRE_MESSAGE(b, (b ? "" : b.err().to_string()));
    BOOST_REQUIRE(b->deps.has_value()); // catch-up carries the Bloom timestamp
    require_dependencies(r, from, *b);
    auto end = r.apply_replicated(*b);
    BOOST_REQUIRE_MESSAGE(end, (end ? "" : end.err().to_string()));
  }
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(partition_replication_tests, copies)

BOOST_AUTO_TEST_CASE(replicas_fed_every_batch_hold_the_primarys_journal_and_values) {
  const unsigned seed = std::random_device{}();
  BOOST_TEST_MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  auto p = open("primary", true);
  auto a = open("a", false); // gets every batch as it is flushed
  auto b = open("b", false); // misses some, then catches up
  std::map<int, std::int64_t> expected;
  std::uint64_t seq = 0;
  // Committed and flushed (retried below), and committed not yet flushed.
  std::vector<std::pair<tx_id, std::vector<tx_update>>> sent, unflushed;
  std::uint64_t gaps = 0;
  for (std::uint64_t t = 1; t <= 300; ++t) {
    now += 10;
    const tx_id tx{t, 9};
    const int kind = static_cast<int>(rng() % 5);
    if (kind == 4 && !sent.empty()) {
      // A retry of an earlier transaction's updates (same op ids): dismissed.
      auto again = sent[rng() % sent.size()];
      auto out = p->stage_prepare(tx, again.second, 0, false);
      BOOST_REQUIRE(out);
      BOOST_TEST(out->dismissed == again.second.size());
      BOOST_REQUIRE(p->stage_commit(tx, out->prepare_time));
    } else {
      std::vector<tx_update> ups;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) {
        const int k = static_cast<int>(rng() % 8);
        ups.push_back(inc(k, 1 + static_cast<std::int64_t>(rng() % 5), op_id{77, ++seq}));
      }
      const bool two_phase = kind >= 2;
      auto out = p->stage_prepare(tx, ups, 0, two_phase);
      BOOST_REQUIRE(out);
      BOOST_REQUIRE(!out->blocked_by);
      if (kind == 3) { // prepared, then aborted in a later batch
        BOOST_REQUIRE(p->flush());
        sent.insert(sent.end(), unflushed.begin(), unflushed.end());
        unflushed.clear();
        BOOST_REQUIRE(p->stage_abort(tx));
      } else {
        if (two_phase) {
          BOOST_REQUIRE(p->flush()); // the prepare is its own batch
          sent.insert(sent.end(), unflushed.begin(), unflushed.end());
          unflushed.clear();
        }
        BOOST_REQUIRE(p->stage_commit(tx, out->prepare_time + (two_phase ? 3 : 0)));
        for (const auto& u : ups)
          expected[std::stoi(u.key.key.substr(1))] += std::get<counter_effect>(u.effect).delta;
        unflushed.emplace_back(tx, ups);
      }
    }
    if (rng() % 3 == 0 || t == 300) {
      BOOST_REQUIRE(p->flush());
      sent.insert(sent.end(), unflushed.begin(), unflushed.end());
      unflushed.clear();
      auto batches = p->take_flushed();
      for (const auto& bt : batches) {
        BOOST_REQUIRE(bt.deps.has_value()); // every batch carries its Bloom timestamp
        require_dependencies(*a, *p, bt);
        auto end = a->apply_replicated(bt);
        BOOST_REQUIRE_MESSAGE(end, (end ? "" : end.err().to_string()));
        if (rng() % 4 != 0) { // b misses about one batch in four
          // The dependency check refuses exactly the batches after a gap,
          // Bloom clock first (docs/REPLICATION.md, "Dependency check").
          const bool behind = bt.first > b->log_end();
          auto v = b->check_dependencies(bt, prefix_of(*b, *p, bt.first));
          BOOST_TEST((v == (behind ? dependency_verdict::gap : dependency_verdict::apply)));
          auto e = b->apply_replicated(bt);
          BOOST_TEST(!e == behind);
          if (!e) {
            BOOST_TEST((e.err().code() == errc::invalid_argument));
            ++gaps;
            catch_up(*p, *b);
          }
        }
      }
    }
  }
  catch_up(*p, *b);
  BOOST_TEST(a->log_end() == p->log_end());
  BOOST_TEST(b->log_end() == p->log_end());
  // Record for record the same journal.
  auto pa = p->records_from(1, 1u << 20);
  auto ra = a->records_from(1, 1u << 20);
  auto rb = b->records_from(1, 1u << 20);
  BOOST_REQUIRE(pa && ra && rb);
  BOOST_REQUIRE(ra->records.size() == pa->records.size());
  BOOST_REQUIRE(rb->records.size() == pa->records.size());
  for (std::size_t i = 0; i < pa->records.size(); ++i) {
    BOOST_TEST(ra->records[i].index() == pa->records[i].index());
    BOOST_TEST(rb->records[i].index() == pa->records[i].index());
    BOOST_TEST(record_tx(ra->records[i]) == record_tx(pa->records[i]));
  }
  const auto at = p->safe_time();
  for (int k = 0; k < 8; ++k) {
    BOOST_TEST(value_at(*p, k, at) == expected[k], "key " << k);
    BOOST_TEST(value_at(*a, k, at) == expected[k], "key " << k);
    BOOST_TEST(value_at(*b, k, at) == expected[k], "key " << k);
  }
  BOOST_TEST(a->prepared_count() == 0u);
  BOOST_TEST(b->prepared_count() == 0u);
  BOOST_TEST(a->clock() >= p->clock() - 1000);
  // The dependency checks: `a`, fed in order, confirmed every one; `b`
  // refused each gap, by its Bloom clock alone when a commit was missing
  // (one history: a missing commit is always seen, no false positive of
  // that kind), else by the exact check (only records that tick no clock
  // missing: a two-phase prepare's batch).
  const auto& ca = a->dependency_stats();
  const auto& cb = b->dependency_stats();
  BOOST_TEST(ca.checks == ca.confirmed);
  BOOST_TEST(ca.negatives == 0u);
  BOOST_TEST(cb.negatives + cb.false_positives == gaps);
  BOOST_TEST(cb.saved == cb.negatives);
  BOOST_TEST(cb.fp_commit_missing == 0u);
  BOOST_TEST(cb.contradicted == 0u);
  BOOST_TEST(cb.unchecked == 0u);
  BOOST_TEST_MESSAGE("replica b: " << gaps << " gaps; " << describe(cb));
}

BOOST_AUTO_TEST_CASE(a_replica_takes_over_with_exactly_once_and_undecided_state) {
  auto p = open("primary", true);
  auto r = open("r", false);
  // Committed with an op id; prepared and undecided; both shipped.
  auto one = p->stage_prepare({1, 1}, {inc(1, 5, op_id{9, 1})}, 0, false);
  BOOST_REQUIRE(one);
  BOOST_REQUIRE(p->stage_commit({1, 1}, one->prepare_time));
  auto two = p->stage_prepare({2, 1}, {inc(1, 7, op_id{9, 2})}, 0, true);
  BOOST_REQUIRE(two);
  BOOST_REQUIRE(p->flush());
  ship(*p, {r.get()});
  // The primary is gone. The replica holds the prepared transaction: reads
  // at or above its prepare time wait for its decision, below it they see 5.
  BOOST_TEST(r->prepared_count() == 1u);
  BOOST_TEST(r->safe_time() < two->prepare_time);
  BOOST_TEST(value_at(*r, 1, r->safe_time()) == 5);
  BOOST_TEST(r->clock() >= one->prepare_time);
  // A client's retry of the committed update through the new primary is
  // dismissed; a retry of the undecided one waits for its outcome.
  now += 100;
  auto retry = r->stage_prepare({3, 1}, {inc(1, 5, op_id{9, 1})}, 0, false);
  BOOST_REQUIRE(retry);
  BOOST_TEST(retry->dismissed == 1u);
  BOOST_REQUIRE(r->stage_commit({3, 1}, retry->prepare_time));
  auto wait = r->stage_prepare({4, 1}, {inc(1, 7, op_id{9, 2})}, 0, false);
  BOOST_REQUIRE(wait);
  BOOST_TEST(wait->blocked_by.has_value());
  // The coordinator's decision reaches the new primary: commit.
  BOOST_REQUIRE(r->stage_commit({2, 1}, two->prepare_time + 1));
  BOOST_REQUIRE(r->flush());
  auto ready = r->take_ready();
  BOOST_REQUIRE(ready.size() == 1u);
  auto resumed = r->resume_prepare(ready[0]);
  BOOST_REQUIRE(resumed);
  BOOST_TEST(resumed->dismissed == 1u); // the original committed
  BOOST_REQUIRE(r->stage_commit({4, 1}, resumed->prepare_time));
  BOOST_REQUIRE(r->flush());
  BOOST_TEST(value_at(*r, 1, r->safe_time()) == 12);
  // New commits are above everything the old primary committed.
  BOOST_TEST(resumed->prepare_time > two->prepare_time);
}

BOOST_AUTO_TEST_CASE(resends_are_idempotent_and_gaps_are_refused) {
  auto p = open("primary", true);
  auto r = open("r", false);
  for (std::uint64_t t = 1; t <= 3; ++t) {
    auto out = p->stage_prepare({t, 1}, {inc(0, 1)}, 0, false);
    BOOST_REQUIRE(out);
    BOOST_REQUIRE(p->stage_commit({t, 1}, out->prepare_time));
    BOOST_REQUIRE(p->flush());
  }
  auto batches = p->take_flushed();
  BOOST_REQUIRE(batches.size() == 3u);
  BOOST_TEST(p->take_flushed().empty());
  auto gap = r->apply_replicated(batches[1]);
  BOOST_REQUIRE(!gap);
  BOOST_TEST((gap.err().code() == errc::invalid_argument));
  BOOST_TEST(r->log_end() == 1u); // nothing applied
  BOOST_REQUIRE(r->apply_replicated(batches[0]));
  BOOST_REQUIRE(r->apply_replicated(batches[1]));
  auto again = r->apply_replicated(batches[0]); // a resend
  BOOST_REQUIRE(again);
  BOOST_TEST(*again == batches[1].end());
  BOOST_REQUIRE(r->apply_replicated(batches[2]));
  BOOST_TEST(value_at(*r, 0, r->safe_time()) == 3);
  // records_from beyond the end is refused; at the end it is empty.
  BOOST_TEST(!p->records_from(p->log_end() + 1, 10));
  auto none = p->records_from(p->log_end(), 10);
  BOOST_REQUIRE(none);
  BOOST_TEST(none->empty());
}

BOOST_AUTO_TEST_CASE(a_reopened_replica_continues_from_its_journal_end) {
  auto p = open("primary", true);
  auto r = open("r", false);
  for (std::uint64_t t = 1; t <= 4; ++t) {
    auto out = p->stage_prepare({t, 1}, {inc(2, 10, op_id{5, t})}, 0, false);
    BOOST_REQUIRE(out);
    BOOST_REQUIRE(p->stage_commit({t, 1}, out->prepare_time));
    BOOST_REQUIRE(p->flush());
    if (t == 2) {
      ship(*p, {r.get()});
      r.reset(); // the replica's node restarts
      r = open("r", false);
    }
  }
  catch_up(*p, *r);
  BOOST_TEST(r->log_end() == p->log_end());
  BOOST_TEST(value_at(*r, 2, p->safe_time()) == 40);
  // Its op-id state came back with it: a retry of t = 1 is a duplicate.
  auto dup = r->stage_prepare({9, 9}, {inc(2, 10, op_id{5, 1})}, 0, false);
  BOOST_REQUIRE(dup);
  BOOST_TEST(dup->dismissed == 1u);
}

BOOST_AUTO_TEST_CASE(records_folded_into_a_checkpoint_need_a_full_copy_unless_kept) {
  auto o = options("primary", true);
  o.snapshot_retention_us = 1000;
  o.fbf_margin_us = 0;
  auto pc = partition_core::open(o);
  BOOST_REQUIRE(pc);
  auto& p = *pc;
  for (std::uint64_t t = 1; t <= 5; ++t) {
    auto out = p->stage_prepare({t, 1}, {inc(3, 1)}, 0, false);
    BOOST_REQUIRE(out);
    BOOST_REQUIRE(p->stage_commit({t, 1}, out->prepare_time));
    BOOST_REQUIRE(p->flush());
  }
  // A replica stopped at LSN 3: the primary keeps its log from there.
  p->keep_log_from(3);
  now += 10'000'000;
  fbf_ms += 10'000;
  auto cp = p->checkpoint();
  BOOST_REQUIRE(cp);
  BOOST_TEST(p->log().truncation_lsn() <= 3u);
  BOOST_TEST(p->records_from(3, 100).has_value());
  // Once it need not wait, the log is folded: from LSN 1 there is only a
  // full copy.
  p->keep_log_from(0);
  for (std::uint64_t t = 6; t <= 7; ++t) {
    auto out = p->stage_prepare({t, 1}, {inc(3, 1)}, 0, false);
    BOOST_REQUIRE(out);
    BOOST_REQUIRE(p->stage_commit({t, 1}, out->prepare_time));
    BOOST_REQUIRE(p->flush());
  }
  now += 10'000'000;
  fbf_ms += 10'000;
  BOOST_REQUIRE(p->checkpoint());
  auto gone = p->records_from(1, 100);
  BOOST_REQUIRE(!gone);
  BOOST_TEST((gone.err().code() == errc::not_found));
}

// ---- the dependency check (docs/REPLICATION.md, "Dependency check") ------

namespace {

// One-step commits of `n` transactions t0 + 1 .. t0 + n, each flushed as its
// own batch.
void commit_each(partition_core& p, std::uint64_t t0, std::uint64_t n) {
  for (std::uint64_t t = t0 + 1; t <= t0 + n; ++t) {
    auto out = p.stage_prepare({t, 1}, {inc(0, 1)}, 0, false);
    BOOST_REQUIRE(out);
    BOOST_REQUIRE(p.stage_commit({t, 1}, out->prepare_time));
    BOOST_REQUIRE(p.flush());
  }
}

} // namespace

BOOST_AUTO_TEST_CASE(a_replica_missing_a_batch_is_refused_by_its_bloom_clock_alone) {
  auto p = open("primary", true);
  auto r = open("r", false);
  commit_each(*p, 0, 3);
  auto batches = p->take_flushed();
  BOOST_REQUIRE(batches.size() == 3u);
  // Each batch depends on the commit before it: the first on none (the
  // zero clock), the next on the commit of the one before.
  BOOST_REQUIRE(batches[0].deps && batches[1].deps && batches[2].deps);
  BOOST_TEST(batches[0].deps->commit_at == 0u);
  BOOST_TEST(batches[0].deps->clock.sum() == 0u);
  BOOST_TEST(batches[1].deps->commit_at == batches[0].end() - 1);
  BOOST_TEST(batches[1].deps->commit_tx == (tx_id{1, 1}));
  require_dependencies(*r, *p, batches[0]);
  BOOST_REQUIRE(r->apply_replicated(batches[0]));
  // The second batch is lost: the third is refused as a gap on the Bloom
  // clock alone, the exact prefix check never asked.
  int asked = 0;
  auto v = r->check_dependencies(batches[2], [&] {
    ++asked;
    return true;
  });
  BOOST_TEST(to_string(v) == std::string{"gap"});
  BOOST_TEST(asked == 0);
  const auto& c = r->dependency_stats();
  BOOST_TEST(c.negatives == 1u);
  BOOST_TEST(c.saved == 1u);
  BOOST_TEST(c.confirmed == 1u);
  BOOST_TEST(c.false_positives == 0u);
  // The primary sends what it misses from its journal, with the
  // dependency at that LSN: confirmed and applied; the third is then a
  // resend, confirmed too.
  catch_up(*p, *r);
  require_dependencies(*r, *p, batches[2]);
  BOOST_TEST(r->log_end() == p->log_end());
  BOOST_TEST(value_at(*r, 0, p->safe_time()) == 3);
  BOOST_TEST(r->dependency_stats().contradicted == 0u);
}

BOOST_AUTO_TEST_CASE(a_missed_prepare_batch_is_a_false_positive_the_exact_check_catches) {
  auto p = open("primary", true);
  auto r = open("r", false);
  commit_each(*p, 0, 1);
  ship(*p, {r.get()});
  // A two-phase transaction: its prepare's batch (updates and prepare, no
  // commit: no Bloom clock tick) is lost, its commit's batch arrives.
  auto out = p->stage_prepare({7, 1}, {inc(1, 5)}, 0, true);
  BOOST_REQUIRE(out);
  BOOST_REQUIRE(p->flush());
  BOOST_REQUIRE(p->stage_commit({7, 1}, out->prepare_time + 1));
  BOOST_REQUIRE(p->flush());
  auto batches = p->take_flushed();
  BOOST_REQUIRE(batches.size() == 2u);
  // Both depend on the same commit, which the replica has: the clocks are
  // equal, the Bloom test positive, and only the exact check (the LSN
  // position) sees the gap.
  BOOST_TEST(batches[1].deps->clock == batches[0].deps->clock);
  auto v = r->check_dependencies(batches[1], prefix_of(*r, *p, batches[1].first));
  BOOST_TEST(to_string(v) == std::string{"gap"});
  const auto& c = r->dependency_stats();
  BOOST_TEST(c.false_positives == 1u);
  BOOST_TEST(c.fp_commit_missing == 0u); // the commit before it is here
  BOOST_TEST(c.negatives == 0u);
  catch_up(*p, *r);
  BOOST_TEST(value_at(*r, 1, p->safe_time()) == 5);
}

BOOST_AUTO_TEST_CASE(a_copy_that_diverged_is_found_by_its_bloom_clock) {
  auto p = open("primary", true);
  auto r = open("r", false);
  commit_each(*p, 0, 1);
  ship(*p, {r.get()});
  // r led for a moment (an old primary) and wrote a commit nobody else has;
  // p, the new primary, committed two others at the same LSNs and on.
  BOOST_REQUIRE(r->stage_prepare({50, 2}, {inc(2, 9)}, 0, false));
  BOOST_REQUIRE(r->stage_commit({50, 2}, now + 5));
  BOOST_REQUIRE(r->flush());
  commit_each(*p, 1, 2);
  p->take_flushed();
  BOOST_TEST(r->log_end() == 5u);
  BOOST_TEST(p->log_end() == 7u);
  // Sent from r's end: the positions are there, but r's Bloom clock does
  // not dominate the commits p has before them: diverged (the primary then
  // sends a full copy). The prefix check audits it: the record before is
  // not the primary's either.
  auto from_r_end = p->records_from(r->log_end(), 10);
  BOOST_REQUIRE(from_r_end);
  auto v = r->check_dependencies(*from_r_end, prefix_of(*r, *p, from_r_end->first));
  BOOST_TEST(to_string(v) == std::string{"diverged"});
  const auto& c = r->dependency_stats();
  BOOST_TEST(c.negatives_diverged == 1u);
  BOOST_TEST(c.contradicted == 0u);
  // From beyond its end: a gap, on the Bloom clock alone.
  auto beyond = p->records_from(6, 10);
  BOOST_REQUIRE(beyond);
  BOOST_TEST(to_string(r->check_dependencies(*beyond, prefix_of(*r, *p, 6))) == std::string{"gap"});
  BOOST_TEST(r->dependency_stats().saved == 1u);
}

// Chaos finding (3 nodes, kill -9, seed 9470923209104122295): a copy that
// led for a moment wrote a tail nobody acknowledged; the new primary's
// first batch to it starts inside that tail (at the end they shared), so
// its dependencies are all there and the Bloom clock says "apply".
// apply_replicated skipped the part below the copy's end unchecked: the
// copy kept the old tail in place of the new primary's acknowledged
// records, and a later round that pulled from it lost them.
BOOST_AUTO_TEST_CASE(a_batch_starting_inside_a_former_primarys_tail_is_refused) {
  auto p = open("primary", true);
  auto r = open("r", false);
  commit_each(*p, 0, 1);
  ship(*p, {r.get()});
  const lsn shared = r->log_end();
  // r, an old primary for a moment: one commit of its own.
  BOOST_REQUIRE(r->stage_prepare({50, 2}, {inc(2, 9)}, 0, false));
  BOOST_REQUIRE(r->stage_commit({50, 2}, now + 5));
  BOOST_REQUIRE(r->flush());
  // p, the new primary, commits two others from the shared end on.
  commit_each(*p, 1, 2);
  p->take_flushed();
  auto from_shared = p->records_from(shared, 10);
  BOOST_REQUIRE(from_shared);
  BOOST_REQUIRE(from_shared->first < r->log_end());
  BOOST_TEST(to_string(r->check_dependencies(*from_shared, prefix_of(*r, *p, shared)))
             == std::string{"apply"});
  BOOST_TEST(!r->overlap_matches(*from_shared));
  const lsn before = r->log_end();
  auto applied = r->apply_replicated(*from_shared);
  BOOST_REQUIRE(!applied);
  BOOST_TEST((applied.err().code() == errc::corrupt));
  BOOST_TEST(r->log_end() == before); // nothing of it taken
  // A true resend (the records r holds) still matches and is idempotent.
  auto q = open("q", false);
  auto all = p->records_from(1, 100);
  BOOST_REQUIRE(all);
  BOOST_REQUIRE(q->apply_replicated(*all));
  BOOST_TEST(q->overlap_matches(*from_shared));
  auto again = q->apply_replicated(*from_shared);
  BOOST_REQUIRE(again);
  BOOST_TEST(*again == p->log_end());
}

BOOST_AUTO_TEST_CASE(reopened_copies_keep_their_dependency_at_the_journals_end) {
  auto p = open("primary", true);
  auto r = open("r", false);
  commit_each(*p, 0, 2);
  ship(*p, {r.get()});
  // Both restart: each finds its journal's last commit again.
  p.reset();
  r.reset();
  p = open("primary", true);
  r = open("r", false);
  auto probe = p->dependency_at(p->log_end());
  BOOST_REQUIRE(probe);
  BOOST_TEST(probe->commit_tx == (tx_id{2, 1}));
  commit_each(*p, 2, 2);
  ship(*p, {r.get()});
  BOOST_TEST(r->dependency_stats().confirmed == 2u);
  BOOST_TEST(r->dependency_stats().negatives == 0u);
  // The dependency at an LSN inside the journal, found by scanning back.
  auto mid = p->dependency_at(3);
  BOOST_REQUIRE(mid);
  BOOST_TEST(mid->commit_at == 2u);
  BOOST_TEST(mid->commit_tx == (tx_id{1, 1}));
  BOOST_TEST(!p->dependency_at(p->log_end() + 1));
}

BOOST_AUTO_TEST_SUITE_END()
