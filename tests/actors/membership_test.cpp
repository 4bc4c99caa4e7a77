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
#include "actors/undecided_resolution.hpp"
#include "actors/wire.hpp"

using namespace tally;

namespace {

tx_update inc(const std::string& key, std::int64_t d) {
  return tx_update{object_key{"b", key}, crdt_type::counter, counter_effect{d}, std::nullopt};
}

// Two partitions' stores in a fresh folder, whose clock reads `then` (the
// past the test prepares in) until `old` is cleared, then the wall clock.
struct two_partitions {
  std::filesystem::path dir;
  std::shared_ptr<std::atomic<bool>> old = std::make_shared<std::atomic<bool>>(true);
  std::vector<std::unique_ptr<partition_core>> cores;

  explicit two_partitions(std::uint64_t then) {
    dir = std::filesystem::temp_directory_path()
          / ("tally-membership-" + std::to_string(std::random_device{}()));
    for (std::uint32_t i = 0; i < 2; ++i) {
      partition_options o;
      o.index = i;
      o.path = (dir / std::to_string(i)).string();
      o.mode = durability::none;
      o.now_us = [old = old, then] { return old->load() ? then : wall_clock_us(); };
      auto core = partition_core::open(o);
      BOOST_REQUIRE(core);
      cores.push_back(std::move(*core));
    }
  }
  ~two_partitions() { std::filesystem::remove_all(dir); }
};

// A one-member node running the two partitions (their cores taken) and
// its membership, with `request_timeout` and, when given, the node's
// coordinated transactions. Stopped however the test ends.
class one_node {
public:
  one_node(two_partitions& parts, const node_id& self, std::uint64_t incarnation,
           std::chrono::milliseconds request_timeout,
           std::shared_ptr<coordinated_txs> coordinating = nullptr) {
    cfg_.set("scheduler.max-threads", 2);
    sys_ = std::make_unique<caf::actor_system>(cfg_);
    auto board = std::make_shared<safe_board>(2);
    for (std::uint32_t i = 0; i < 2; ++i)
      local_.push_back(spawn_partition(*sys_, std::move(parts.cores[i]),
                                       partition_placement::detached(), board_slot(board, i)));
    auto ring = ring_state::create(self, 2, 1);
    BOOST_REQUIRE(ring);
    membership_config mc;
    mc.self = self;
    mc.root = parts.dir.string();
    mc.q = 2;
    mc.request_timeout = request_timeout;
    mc.incarnation = incarnation;
    mc.coordinating = std::move(coordinating);
    mc.open_partition = [](std::uint32_t) -> expected<caf::actor> {
      return make_error(errc::unavailable, "not in this test");
    };
    membership_ = spawn_membership(*sys_, mc, std::move(*ring), local_,
                                   std::make_shared<routing>());
  }

  ~one_node() {
    for (auto& a : local_)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(membership_, caf::exit_reason::user_shutdown);
    local_.clear(); // no handle may outlive the system's wait for its actors
    membership_ = nullptr;
    sys_.reset();
  }

  const caf::actor& partition(std::uint32_t i) const { return local_.at(i); }
  const caf::actor& membership() const { return membership_; }
  caf::actor_system& system() { return *sys_; }

  // The counters `keys[i]` of partition i read at a snapshot of now, once
  // every read is served (a prepared transaction holds its keys until it is
  // decided): all of them in order, or none after 20 s.
  std::vector<std::int64_t> read_once_decided(const std::vector<std::vector<std::string>>& keys) {
    caf::scoped_actor me{*sys_};
    std::size_t wanted = 0;
    for (const auto& k : keys)
      wanted += k.size();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      std::vector<std::int64_t> got;
      for (std::uint32_t i = 0; i < keys.size(); ++i) {
        part_read_req r;
        r.snapshot = vector_clock{{local_dc, wall_clock_us()}};
        for (const auto& k : keys[i])
          r.items.push_back(read_item{object_key{"b", k}, crdt_type::counter, {}});
        me->request(local_[i], std::chrono::milliseconds(300), part_read_atom::value,
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
      if (got.size() == wanted)
        return got;
    }
    return {};
  }

private:
  caf::actor_system_config cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::vector<caf::actor> local_;
  caf::actor membership_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(membership_tests)

BOOST_AUTO_TEST_CASE(transactions_prepared_long_ago_are_committed_or_aborted_with_the_cluster) {
  two_partitions parts{wall_clock_us() - 10'000'000}; // prepared 10 s ago
  auto& cores = parts.cores;
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
  parts.old->store(false);

  // Reads at "now" wait while the old transactions hold the partitions'
  // safe time; they succeed once the membership has decided them.
  one_node node{parts, "tally@127.0.0.1:1", 1, std::chrono::milliseconds{100}}; // stale after 300 ms
  auto values = node.read_once_decided({{"a", "c"}, {"b", "d"}});
  BOOST_REQUIRE(values.size() == 4u); // decided within the bound
  BOOST_TEST(values[0] == 5); // a: tx1 committed on partition 0 too
  BOOST_TEST(values[2] == 5); // b: tx1 as committed on partition 1
  BOOST_TEST(values[1] == 0); // c: tx2 aborted
  BOOST_TEST(values[3] == 0); // d: tx2 aborted
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
  two_partitions parts{wall_clock_us() - 10'000'000}; // prepared 10 s ago
  const std::uint64_t incarnation = 777;
  const node_id self = "tally@127.0.0.1:1";
  auto coordinating = std::make_shared<coordinated_txs>();
  tx_id tx3{incarnation, 3}, tx4{incarnation, 4};
  coordinating->begin(tx3);
  coordinating->begin(tx4);
  std::uint64_t t4 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto& core = parts.cores[i];
    auto a = core->stage_prepare(tx3, {inc("e" + std::to_string(i), 3)}, 0, true, {0, 1}, self);
    auto b = core->stage_prepare(tx4, {inc("f" + std::to_string(i), 4)}, 0, true, {0, 1}, self);
    BOOST_REQUIRE(a);
    BOOST_REQUIRE(b);
    t4 = std::max(t4, b->prepare_time);
    BOOST_REQUIRE(core->flush());
  }
  BOOST_REQUIRE(coordinating->commit(tx4, t4)); // decided; its commits were lost
  parts.old->store(false);
  one_node node{parts, self, incarnation, std::chrono::milliseconds{100}, coordinating};
  auto values = node.read_once_decided({{"e0", "f0"}, {"e1", "f1"}});
  BOOST_REQUIRE(values.size() == 4u); // decided within the bound
  BOOST_TEST(values[0] == 0); // e0: tx3 aborted by its coordinator
  BOOST_TEST(values[2] == 0); // e1
  BOOST_TEST(values[1] == 4); // f0: tx4 committed on its coordinator's word
  BOOST_TEST(values[3] == 4); // f1
  // The coordinator can no longer commit tx3.
  BOOST_TEST(!coordinating->commit(tx3, t4 + 1));
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
  two_partitions parts{wall_clock_us() - 21'000'000}; // prepared 21 s ago
  const tx_id tx5{31337, 5};
  std::uint64_t t5 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto& core = parts.cores[i];
    auto a = core->stage_prepare(tx5, {inc("g" + std::to_string(i), 5)}, 0, true, {0, 1},
                                 "tally@127.0.0.1:9");
    BOOST_REQUIRE(a);
    t5 = std::max(t5, a->prepare_time);
    BOOST_REQUIRE(core->flush());
  }
  parts.old->store(false);
  one_node node{parts, "tally@127.0.0.1:1", 1, std::chrono::milliseconds{20000}};
  auto values = node.read_once_decided({{"g0"}, {"g1"}});
  BOOST_REQUIRE_MESSAGE(values.size() == 2u, "still undecided after 20 s");
  BOOST_TEST(values[0] == 0); // aborted at both
  BOOST_TEST(values[1] == 0);
  // The coordinator comes back and commits: refused at both.
  caf::scoped_actor me{node.system()};
  for (std::uint32_t i = 0; i < 2; ++i) {
    std::optional<part_ack> ack;
    me->request(node.partition(i), std::chrono::seconds(2), part_commit_atom::value,
                encode_wire(part_commit_req{tx5, t5}))
      .receive(
        [&](std::string& bytes) {
          if (auto a = decode_wire<part_ack>(bytes))
            ack = std::move(*a);
        },
        [](caf::error&) {});
    BOOST_REQUIRE(ack);
    BOOST_REQUIRE(ack->err);
    BOOST_TEST(ack->err->code() == errc::aborted);
  }
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
  two_partitions parts{wall_clock_us() - 21'000'000}; // prepared 21 s ago
  const std::uint64_t incarnation = 4711;
  const node_id self = "tally@127.0.0.1:1";
  auto coordinating = std::make_shared<coordinated_txs>();
  const tx_id tx6{incarnation, 6};
  coordinating->begin(tx6);
  std::uint64_t t6 = 0;
  for (std::uint32_t i = 0; i < 2; ++i) {
    auto& core = parts.cores[i];
    auto a = core->stage_prepare(tx6, {inc("h" + std::to_string(i), 6)}, 0, true, {0, 1}, self);
    BOOST_REQUIRE(a);
    t6 = std::max(t6, a->prepare_time);
    BOOST_REQUIRE(core->flush());
    auto f = core->stage_fence(tx6);
    BOOST_REQUIRE(f);
    BOOST_REQUIRE(f->fenced);
    BOOST_REQUIRE(core->flush());
  }
  BOOST_REQUIRE(coordinating->commit(tx6, t6)); // its word: committed at t6
  parts.old->store(false);
  one_node node{parts, self, incarnation, std::chrono::milliseconds{20000}, coordinating};
  auto values = node.read_once_decided({{"h0"}, {"h1"}});
  BOOST_REQUIRE_MESSAGE(values.size() == 2u, "still undecided after 20 s");
  BOOST_TEST(values[0] == 0); // aborted at both: no participant took a commit
  BOOST_TEST(values[1] == 0);
}

// The open finding of stop 31 (docs/RELIABILITY.md): a node planned from
// a peer's copy states it had not heard for a minute. A peer counted up
// whose gossip stops arriving is now asked for it (m_gask) at every tick
// once it has been silent for 3 s. The "peer" here is a scoped actor that
// gossips once (the node's own ring, so nothing else changes) and then
// stays silent: it is answered with the node's gossip at once, and asked
// for its own within the 3 s and two ticks; the node never asks while the
// peer keeps gossiping (the first second after its gossip).
BOOST_AUTO_TEST_CASE(a_peer_counted_up_but_silent_is_asked_for_its_gossip) {
  two_partitions parts{wall_clock_us()};
  parts.old->store(false);
  const node_id self = "tally@127.0.0.1:1";
  one_node node{parts, self, 1, std::chrono::milliseconds{1000}};
  caf::scoped_actor peer{node.system()};
  auto ring = ring_state::create(self, 2, 1);
  BOOST_REQUIRE(ring);
  const auto gossiped = std::chrono::steady_clock::now();
  peer->send(node.membership(), gossip_atom::value, ring->encode(),
             node_id{"tally@127.0.0.1:2"}, std::uint64_t{99}, caf::actor{peer},
             std::vector<caf::actor>{}, std::vector<caf::actor>{}, std::string{});
  bool answered = false, asked = false;
  std::chrono::milliseconds asked_after{0};
  // Bounded: 10 s of messages at most.
  while (!asked && std::chrono::steady_clock::now() - gossiped < std::chrono::seconds(10)) {
    peer->receive(
      [&](gossip_atom, std::string&, node_id& from, std::uint64_t, caf::actor&,
          std::vector<caf::actor>&, std::vector<caf::actor>&, std::string&) {
        BOOST_TEST(from == self);
        answered = true;
      },
      [&](gossip_ask_atom) {
        asked = true;
        asked_after = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - gossiped);
      },
      caf::after(std::chrono::milliseconds(200)) >> [] {});
  }
  BOOST_TEST(answered); // a new peer is answered with gossip
  BOOST_REQUIRE_MESSAGE(asked, "the silent peer was not asked for its gossip within 10 s");
  BOOST_TEST_MESSAGE("asked after " << asked_after.count() << " ms of silence");
  BOOST_TEST(asked_after.count() >= 3000); // not before the bound
  // It answers with gossip, and the node stops asking: no question in the
  // next two ticks after the answer.
  peer->send(node.membership(), gossip_atom::value, ring->encode(),
             node_id{"tally@127.0.0.1:2"}, std::uint64_t{99}, caf::actor{peer},
             std::vector<caf::actor>{}, std::vector<caf::actor>{}, std::string{});
  bool asked_again = false;
  const auto answered_at = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - answered_at < std::chrono::milliseconds(2200))
    peer->receive([&](gossip_ask_atom) { asked_again = true; },
                  [&](gossip_atom, std::string&, node_id&, std::uint64_t, caf::actor&,
                      std::vector<caf::actor>&, std::vector<caf::actor>&, std::string&) {},
                  caf::after(std::chrono::milliseconds(200)) >> [] {});
  BOOST_TEST(!asked_again);
}

// When a holder forces the coordinator's decision (docs/CLUSTER.md,
// "Recovery of undecided transactions"): a prepare older than a request
// timeout, one from before this run, or one prepared while a node involved
// (the coordinator's, or any copy's of a participant) was going down within
// a request timeout before it; never a young, healthy one.
BOOST_AUTO_TEST_CASE(a_decision_is_forced_only_when_messages_may_have_been_lost) {
  const std::uint64_t limit = 10'000'000, started = 1'000'000'000;
  const std::uint64_t prepared = started + 60'000'000, now = prepared + 1'500'000;
  BOOST_TEST(!decision_forced(now, prepared, limit, started, {}));
  BOOST_TEST(!decision_forced(now, prepared, limit, started, {0, 0, 0}));
  BOOST_TEST(decision_forced(prepared + limit + 1, prepared, limit, started, {}));
  BOOST_TEST(decision_forced(now, started, limit, started, {}));
  // A copy node went down 4 ms after the prepare (a kill right after), or
  // 2 s before it: its messages may be lost.
  BOOST_TEST(decision_forced(now, prepared, limit, started, {0, prepared + 4'000, 0}));
  BOOST_TEST(decision_forced(now, prepared, limit, started, {prepared - 2'000'000}));
  // Down longer than a request timeout before the prepare: not this one.
  BOOST_TEST(!decision_forced(now, prepared, limit, started, {prepared - limit - 1}));
}

BOOST_AUTO_TEST_SUITE_END()
