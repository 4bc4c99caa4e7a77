// The membership actor's recovery of transactions whose coordinator went
// silent (docs/CLUSTER.md, "Recovery of undecided transactions"), on a
// one-member ring: partitions hold transactions prepared long ago; the
// membership finds them on its timer, commits the one whose commit record
// another partition holds, and aborts the one committed nowhere. The
// partitions' clocks are the tests' (the prepare times are 10 s old); the
// wait for the membership's ticks is a bounded loop of reads.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/membership.hpp"
#include "actors/node_context.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "actors/wire.hpp"

using namespace tally;

namespace {

tx_update inc(const std::string& key, std::int64_t d) {
  return tx_update{object_key{"b", key}, crdt_type::counter, counter_effect{d}, std::nullopt};
}

} // namespace

BOOST_AUTO_TEST_SUITE(membership_tests)

BOOST_AUTO_TEST_CASE(transactions_prepared_long_ago_are_committed_or_aborted_with_the_cluster) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("tally-membership-" + std::to_string(rd()));
  auto old = std::make_shared<std::atomic<bool>>(true);
  const std::uint64_t then = wall_clock_us() - 10'000'000; // 10 s ago
  std::vector<std::unique_ptr<partition_core>> cores;
  for (std::uint32_t i = 0; i < 2; ++i) {
    partition_options o;
    o.index = i;
    o.path = (dir / std::to_string(i)).string();
    o.mode = durability::none;
    o.now_us = [old, then] { return old->load() ? then : wall_clock_us(); };
    auto core = partition_core::open(o);
    BOOST_REQUIRE(core);
    cores.push_back(std::move(*core));
  }
  // tx1: prepared on both partitions, committed on partition 1 only (its
  // coordinator died before committing partition 0).
  tx_id tx1{4242, 1}, tx2{4242, 2};
  auto p0 = cores[0]->stage_prepare(tx1, {inc("a", 5)}, 0, true);
  auto p1 = cores[1]->stage_prepare(tx1, {inc("b", 5)}, 0, true);
  BOOST_REQUIRE(p0);
  BOOST_REQUIRE(p1);
  auto commit_time = std::max(p0->prepare_time, p1->prepare_time);
  BOOST_REQUIRE(cores[1]->stage_commit(tx1, commit_time));
  // tx2: prepared on both, committed nowhere.
  BOOST_REQUIRE(cores[0]->stage_prepare(tx2, {inc("c", 7)}, 0, true));
  BOOST_REQUIRE(cores[1]->stage_prepare(tx2, {inc("d", 7)}, 0, true));
  BOOST_REQUIRE(cores[0]->flush());
  BOOST_REQUIRE(cores[1]->flush());
  BOOST_TEST(cores[0]->prepared_count() == 2u);
  BOOST_TEST(cores[1]->prepared_count() == 1u);
  old->store(false);

  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto board = std::make_shared<safe_board>(2);
    std::vector<caf::actor> local;
    for (std::uint32_t i = 0; i < 2; ++i)
      local.push_back(spawn_partition(sys, std::move(cores[i]), partition_placement::detached(), board_slot(board, i)));
    auto ring = ring_state::create("tally@127.0.0.1:1", 2, 1);
    BOOST_REQUIRE(ring);
    membership_config mc;
    mc.self = "tally@127.0.0.1:1";
    mc.root = dir.string();
    mc.q = 2;
    mc.request_timeout = std::chrono::milliseconds{100}; // stale after 300 ms
    mc.incarnation = 1;
    mc.open_partition = [](std::uint32_t) -> expected<caf::actor> {
      return make_error(errc::unavailable, "not in this test");
    };
    auto routes = std::make_shared<routing>();
    auto m = spawn_membership(sys, mc, std::move(*ring), local, routes);

    // Reads at "now" wait while the old transactions hold the partitions'
    // safe time; they succeed once the membership has decided them.
    caf::scoped_actor me{sys};
    std::vector<std::int64_t> values;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (values.empty() && std::chrono::steady_clock::now() < deadline) {
      part_read_req r0, r1;
      r0.snapshot = r1.snapshot = vector_clock{{local_dc, wall_clock_us()}};
      r0.items = {read_item{object_key{"b", "a"}, crdt_type::counter, {}},
                  read_item{object_key{"b", "c"}, crdt_type::counter, {}}};
      r1.items = {read_item{object_key{"b", "b"}, crdt_type::counter, {}},
                  read_item{object_key{"b", "d"}, crdt_type::counter, {}}};
      std::vector<std::int64_t> got;
      for (auto [who, req] : {std::make_pair(local[0], r0), std::make_pair(local[1], r1)})
        me->request(who, std::chrono::milliseconds(300), part_read_atom::value, encode_wire(req))
          .receive(
            [&](std::string& bytes) {
              auto resp = decode_wire<part_read_resp>(bytes);
              if (resp && !resp->err)
                for (auto& v : resp->values)
                  got.push_back(std::get<std::int64_t>(v));
            },
            [&](caf::error&) {});
      if (got.size() == 4)
        values = got;
    }
    BOOST_REQUIRE(values.size() == 4u); // decided within the bound
    BOOST_TEST(values[0] == 5); // a: tx1 committed on partition 0 too
    BOOST_TEST(values[2] == 5); // b: tx1 as committed on partition 1
    BOOST_TEST(values[1] == 0); // c: tx2 aborted
    BOOST_TEST(values[3] == 0); // d: tx2 aborted
    for (auto& a : local)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  }
  std::filesystem::remove_all(dir);
}

// Issue 13, cooperative termination: the coordinator itself is asked how
// its two-phase commit ended, at the same time as the participants its
// prepare records name. tx3's coordinator (this node's run) still waits
// for its prepares (their answers were lost): asked with force (the
// transaction is older than a request timeout) it aborts, and its commit()
// then refuses. tx4's coordinator decided commit at T but no commit record
// landed anywhere: the holders commit at T on its word. Before, tx3 waited
// for its coordinator ("still in progress") and tx4 had no commit record to
// be found: both stayed prepared, and the reads below timed out.
BOOST_AUTO_TEST_CASE(the_coordinator_is_asked_and_its_decision_is_applied) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("tally-membership-" + std::to_string(rd()));
  auto old = std::make_shared<std::atomic<bool>>(true);
  const std::uint64_t then = wall_clock_us() - 10'000'000; // 10 s ago
  const std::uint64_t incarnation = 777;
  const node_id self = "tally@127.0.0.1:1";
  std::vector<std::unique_ptr<partition_core>> cores;
  for (std::uint32_t i = 0; i < 2; ++i) {
    partition_options o;
    o.index = i;
    o.path = (dir / std::to_string(i)).string();
    o.mode = durability::none;
    o.now_us = [old, then] { return old->load() ? then : wall_clock_us(); };
    auto core = partition_core::open(o);
    BOOST_REQUIRE(core);
    cores.push_back(std::move(*core));
  }
  auto coordinating = std::make_shared<coordinated_txs>();
  tx_id tx3{incarnation, 3}, tx4{incarnation, 4};
  coordinating->begin(tx3);
  coordinating->begin(tx4);
  std::uint64_t t4 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto a = cores[i]->stage_prepare(tx3, {inc("e" + std::to_string(i), 3)}, 0, true, {0, 1},
                                     self);
    auto b = cores[i]->stage_prepare(tx4, {inc("f" + std::to_string(i), 4)}, 0, true, {0, 1},
                                     self);
    BOOST_REQUIRE(a);
    BOOST_REQUIRE(b);
    t4 = std::max(t4, b->prepare_time);
    BOOST_REQUIRE(cores[i]->flush());
  }
  BOOST_REQUIRE(coordinating->commit(tx4, t4)); // decided; its commits were lost
  old->store(false);
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto board = std::make_shared<safe_board>(2);
    std::vector<caf::actor> local;
    for (std::uint32_t i = 0; i < 2; ++i)
      local.push_back(spawn_partition(sys, std::move(cores[i]), partition_placement::detached(), board_slot(board, i)));
    auto ring = ring_state::create(self, 2, 1);
    BOOST_REQUIRE(ring);
    membership_config mc;
    mc.self = self;
    mc.root = dir.string();
    mc.q = 2;
    mc.request_timeout = std::chrono::milliseconds{100};
    mc.incarnation = incarnation;
    mc.coordinating = coordinating;
    mc.open_partition = [](std::uint32_t) -> expected<caf::actor> {
      return make_error(errc::unavailable, "not in this test");
    };
    auto routes = std::make_shared<routing>();
    auto m = spawn_membership(sys, mc, std::move(*ring), local, routes);
    caf::scoped_actor me{sys};
    std::vector<std::int64_t> values;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (values.empty() && std::chrono::steady_clock::now() < deadline) {
      std::vector<std::int64_t> got;
      for (std::uint32_t i = 0; i < 2; ++i) {
        part_read_req r;
        r.snapshot = vector_clock{{local_dc, wall_clock_us()}};
        r.items = {read_item{object_key{"b", "e" + std::to_string(i)}, crdt_type::counter, {}},
                   read_item{object_key{"b", "f" + std::to_string(i)}, crdt_type::counter, {}}};
        me->request(local[i], std::chrono::milliseconds(300), part_read_atom::value,
                    encode_wire(r))
          .receive(
            [&](std::string& bytes) {
              auto resp = decode_wire<part_read_resp>(bytes);
              if (resp && !resp->err)
                for (auto& v : resp->values)
                  got.push_back(std::get<std::int64_t>(v));
            },
            [&](caf::error&) {});
      }
      if (got.size() == 4)
        values = got;
    }
    BOOST_REQUIRE(values.size() == 4u); // decided within the bound
    BOOST_TEST(values[0] == 0); // e0: tx3 aborted by its coordinator
    BOOST_TEST(values[2] == 0); // e1
    BOOST_TEST(values[1] == 4); // f0: tx4 committed on its coordinator's word
    BOOST_TEST(values[3] == 4); // f1
    // The coordinator can no longer commit tx3.
    BOOST_TEST(!coordinating->commit(tx3, t4 + 1));
    for (auto& a : local)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  }
  std::filesystem::remove_all(dir);
}

// docs/RELIABILITY.md, "The participant fence": tx5 is prepared at both
// partitions by a coordinator out of reach (not a member this node knows:
// it may still commit, so the old rule waits three request timeouts, 60 s
// here). Older than a request timeout (20 s; it is 21 s old), its
// participants are fenced and, fenced at both with no decision, it is
// aborted: reads go on within the test's 20 s, and the coordinator's late
// commit is refused. Without the fence the reads waited until it was 60 s
// old (the test fails).
BOOST_AUTO_TEST_CASE(a_transaction_whose_coordinator_is_out_of_reach_is_decided_behind_a_fence) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("tally-membership-" + std::to_string(rd()));
  auto old = std::make_shared<std::atomic<bool>>(true);
  const std::uint64_t then = wall_clock_us() - 21'000'000; // 21 s ago
  const node_id self = "tally@127.0.0.1:1";
  std::vector<std::unique_ptr<partition_core>> cores;
  for (std::uint32_t i = 0; i < 2; ++i) {
    partition_options o;
    o.index = i;
    o.path = (dir / std::to_string(i)).string();
    o.mode = durability::none;
    o.now_us = [old, then] { return old->load() ? then : wall_clock_us(); };
    auto core = partition_core::open(o);
    BOOST_REQUIRE(core);
    cores.push_back(std::move(*core));
  }
  const tx_id tx5{31337, 5};
  std::uint64_t t5 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto a = cores[i]->stage_prepare(tx5, {inc("g" + std::to_string(i), 5)}, 0, true, {0, 1},
                                     "tally@127.0.0.1:9");
    BOOST_REQUIRE(a);
    t5 = std::max(t5, a->prepare_time);
    BOOST_REQUIRE(cores[i]->flush());
  }
  old->store(false);
  const auto started = std::chrono::steady_clock::now();
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto board = std::make_shared<safe_board>(2);
    std::vector<caf::actor> local;
    for (std::uint32_t i = 0; i < 2; ++i)
      local.push_back(spawn_partition(sys, std::move(cores[i]), partition_placement::detached(),
                                      board_slot(board, i)));
    auto ring = ring_state::create(self, 2, 1);
    BOOST_REQUIRE(ring);
    membership_config mc;
    mc.self = self;
    mc.root = dir.string();
    mc.q = 2;
    mc.request_timeout = std::chrono::milliseconds{20000};
    mc.incarnation = 1;
    mc.open_partition = [](std::uint32_t) -> expected<caf::actor> {
      return make_error(errc::unavailable, "not in this test");
    };
    auto routes = std::make_shared<routing>();
    auto m = spawn_membership(sys, mc, std::move(*ring), local, routes);
    // Stopped however the test ends (a failed check must not leave the
    // system waiting for them for ever).
    struct stop_all {
      std::vector<caf::actor> actors;
      ~stop_all() {
        for (auto& a : actors)
          caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      }
    } stop{local};
    stop.actors.push_back(m);
    caf::scoped_actor me{sys};
    std::vector<std::int64_t> values;
    auto deadline = started + std::chrono::seconds(20);
    while (values.empty() && std::chrono::steady_clock::now() < deadline) {
      std::vector<std::int64_t> got;
      for (std::uint32_t i = 0; i < 2; ++i) {
        part_read_req r;
        r.snapshot = vector_clock{{local_dc, wall_clock_us()}};
        r.items = {read_item{object_key{"b", "g" + std::to_string(i)}, crdt_type::counter, {}}};
        me->request(local[i], std::chrono::milliseconds(300), part_read_atom::value,
                    encode_wire(r))
          .receive(
            [&](std::string& bytes) {
              auto resp = decode_wire<part_read_resp>(bytes);
              if (resp && !resp->err)
                for (auto& v : resp->values)
                  got.push_back(std::get<std::int64_t>(v));
            },
            [&](caf::error&) {});
      }
      if (got.size() == 2)
        values = got;
    }
    BOOST_REQUIRE_MESSAGE(values.size() == 2u, "still undecided after 20 s");
    BOOST_TEST(values[0] == 0); // aborted at both
    BOOST_TEST(values[1] == 0);
    // The coordinator comes back and commits: refused at both.
    for (std::uint32_t i = 0; i < 2; ++i) {
      std::optional<part_ack> ack;
      me->request(local[i], std::chrono::seconds(2), part_commit_atom::value,
                  encode_wire(part_commit_req{tx5, t5}))
        .receive([&](std::string& bytes) {
                   if (auto a = decode_wire<part_ack>(bytes))
                     ack = std::move(*a);
                 },
                 [](caf::error&) {});
      BOOST_REQUIRE(ack);
      BOOST_REQUIRE(ack->err);
      BOOST_TEST(ack->err->code() == errc::aborted);
    }
  }
  std::filesystem::remove_all(dir);
}

// docs/RELIABILITY.md, "The participant fence": tx6 is fenced at both
// partitions (a fence round whose other answers were lost), and its
// coordinator, this node's run, then says it committed. A commit on the
// coordinator's word is refused behind the fence; from then on that word
// is ignored and the next attempt's fence round aborts it. Before, every
// attempt concluded the same refused commit, and tx6 held its keys until
// the coordinator forgot it (3 request timeouts + 30 s: 90 s here; the
// test fails at 20 s).
BOOST_AUTO_TEST_CASE(a_coordinators_word_refused_behind_a_fence_gives_way_to_a_fence_round) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("tally-membership-" + std::to_string(rd()));
  auto old = std::make_shared<std::atomic<bool>>(true);
  const std::uint64_t then = wall_clock_us() - 21'000'000; // 21 s ago
  const std::uint64_t incarnation = 4711;
  const node_id self = "tally@127.0.0.1:1";
  std::vector<std::unique_ptr<partition_core>> cores;
  for (std::uint32_t i = 0; i < 2; ++i) {
    partition_options o;
    o.index = i;
    o.path = (dir / std::to_string(i)).string();
    o.mode = durability::none;
    o.now_us = [old, then] { return old->load() ? then : wall_clock_us(); };
    auto core = partition_core::open(o);
    BOOST_REQUIRE(core);
    cores.push_back(std::move(*core));
  }
  auto coordinating = std::make_shared<coordinated_txs>();
  const tx_id tx6{incarnation, 6};
  coordinating->begin(tx6);
  std::uint64_t t6 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto a = cores[i]->stage_prepare(tx6, {inc("h" + std::to_string(i), 6)}, 0, true, {0, 1},
                                     self);
    BOOST_REQUIRE(a);
    t6 = std::max(t6, a->prepare_time);
    BOOST_REQUIRE(cores[i]->flush());
    auto f = cores[i]->stage_fence(tx6);
    BOOST_REQUIRE(f);
    BOOST_REQUIRE(f->fenced);
    BOOST_REQUIRE(cores[i]->flush());
  }
  BOOST_REQUIRE(coordinating->commit(tx6, t6)); // its word: committed at t6
  old->store(false);
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto board = std::make_shared<safe_board>(2);
    std::vector<caf::actor> local;
    for (std::uint32_t i = 0; i < 2; ++i)
      local.push_back(spawn_partition(sys, std::move(cores[i]), partition_placement::detached(),
                                      board_slot(board, i)));
    auto ring = ring_state::create(self, 2, 1);
    BOOST_REQUIRE(ring);
    membership_config mc;
    mc.self = self;
    mc.root = dir.string();
    mc.q = 2;
    mc.request_timeout = std::chrono::milliseconds{20000};
    mc.incarnation = incarnation;
    mc.coordinating = coordinating;
    mc.open_partition = [](std::uint32_t) -> expected<caf::actor> {
      return make_error(errc::unavailable, "not in this test");
    };
    auto routes = std::make_shared<routing>();
    auto m = spawn_membership(sys, mc, std::move(*ring), local, routes);
    struct stop_all {
      std::vector<caf::actor> actors;
      ~stop_all() {
        for (auto& a : actors)
          caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
      }
    } stop{local};
    stop.actors.push_back(m);
    caf::scoped_actor me{sys};
    std::vector<std::int64_t> values;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (values.empty() && std::chrono::steady_clock::now() < deadline) {
      std::vector<std::int64_t> got;
      for (std::uint32_t i = 0; i < 2; ++i) {
        part_read_req r;
        r.snapshot = vector_clock{{local_dc, wall_clock_us()}};
        r.items = {read_item{object_key{"b", "h" + std::to_string(i)}, crdt_type::counter, {}}};
        me->request(local[i], std::chrono::milliseconds(300), part_read_atom::value,
                    encode_wire(r))
          .receive(
            [&](std::string& bytes) {
              auto resp = decode_wire<part_read_resp>(bytes);
              if (resp && !resp->err)
                for (auto& v : resp->values)
                  got.push_back(std::get<std::int64_t>(v));
            },
            [&](caf::error&) {});
      }
      if (got.size() == 2)
        values = got;
    }
    BOOST_REQUIRE_MESSAGE(values.size() == 2u, "still undecided after 20 s");
    BOOST_TEST(values[0] == 0); // aborted at both: no participant took a commit
    BOOST_TEST(values[1] == 0);
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
