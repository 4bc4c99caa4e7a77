// Three copies of one partition as real partition actors in one actor
// system (docs/REPLICATION.md), configured by the test as a membership
// would (r_config) and driven with the partition protocol: the faults the
// cluster chaos runs found (docs/RELIABILITY.md, "What the cluster runs
// found"), reduced to the copies' messages, with no process, socket or
// clock of the test's own. Every wait is a bounded poll.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/messages.hpp"
#include "actors/node_context.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "actors/partition_replication.hpp"
#include "actors/spawn_helper.hpp"
#include "actors/wire.hpp"
#include "journal/background_syncer.hpp"
#include "replication/replication_batch.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t partition_index = 3;
const object_key the_key{"b", "k"};

// n copies of the partition (w: a majority).
struct copies_fixture {
  std::filesystem::path root;
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<node_id> nodes;
  std::uint32_t w = 2;
  // The ring epoch of the view the test's configurations come from.
  std::uint64_t ring_epoch = 1;
  // Each copy is on a node of its own: its own safe-time board of one slot.
  std::vector<std::shared_ptr<safe_board>> boards;
  std::vector<caf::actor> copies;
  std::unique_ptr<caf::scoped_actor> me;
  std::uint64_t next_tx = 1;
  // Per copy, for the next spawn_copy: its tick, and sync threads (null:
  // it syncs on its own thread, at once).
  std::vector<std::chrono::milliseconds> ticks = std::vector<std::chrono::milliseconds>(8, 50ms);
  std::vector<std::shared_ptr<background_syncer>> syncers =
    std::vector<std::shared_ptr<background_syncer>>(8);

  explicit copies_fixture(std::size_t n) : w(static_cast<std::uint32_t>(n / 2 + 1)) {
    for (std::size_t i = 1; i <= n; ++i)
      nodes.push_back("tally@127.0.0.1:" + std::to_string(i));
    root = std::filesystem::temp_directory_path()
           / ("tally-copies-" + std::to_string(std::random_device{}()));
    std::filesystem::remove_all(root);
    cfg = std::make_unique<caf::actor_system_config>();
    cfg->set("scheduler.max-threads", 2);
    sys = std::make_unique<caf::actor_system>(*cfg);
    me = std::make_unique<caf::scoped_actor>(*sys);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      boards.push_back(std::make_shared<safe_board>(1));
      copies.push_back(spawn_copy(i, std::to_string(i)));
    }
  }

  // A copy for node i, in folder `name` under the root (empty if new).
  caf::actor spawn_copy(std::size_t i, const std::string& name) {
    partition_timers timers;
    timers.fbf_tick = ticks[i];   // the tick: retries of rounds, held writes
    timers.read_timeout = 2000ms; // a write not on 2 copies by then: unknown
    partition_options o;
    o.index = partition_index;
    o.path = (root / name).string();
    o.mode = durability::batch;
    o.sync_elsewhere = syncers[i] != nullptr;
    auto core = partition_core::open(o);
    BOOST_REQUIRE_MESSAGE(core, (core ? "" : core.err().to_string()));
    return spawn_partition(*sys, std::move(*core), partition_placement::detached(),
                           board_slot(boards[i], 0), timers, true, syncers[i]);
  }

  // Node i's copy replaced by an empty one (as the membership replaces a
  // stale copy).
  void replace(std::size_t i) {
    caf::anon_send_exit(copies[i], caf::exit_reason::user_shutdown);
    copies[i] = spawn_copy(i, std::to_string(i) + ".new");
  }

  // Node i's copy stopped and started again on the same folder (a
  // restart of its node): its journal is reopened.
  void restart(std::size_t i) {
    (*me)->monitor(copies[i]);
    caf::anon_send_exit(copies[i], caf::exit_reason::user_shutdown);
    bool gone = false;
    (*me)->receive([&](caf::down_msg&) { gone = true; }, caf::after(5s) >> [] {});
    BOOST_REQUIRE_MESSAGE(gone, "copy " << i << " did not stop");
    copies[i] = spawn_copy(i, std::to_string(i));
  }

  // Copy i drained for a handoff under view epoch 2, as its membership
  // drains it: whether it answered `drained` within `within`.
  bool drain(std::size_t i, std::chrono::seconds within) {
    bool drained = false;
    (*me)->request(copies[i], within, drain_atom::value, std::uint64_t{10000}, std::uint64_t{2})
      .receive([&](drained_atom, std::uint32_t) { drained = true; }, [](caf::error&) {});
    return drained;
  }

  // Copy 0's store as node 3 receives it by a handoff (folder 3.received).
  void ship_0_to_3() {
    std::filesystem::copy(root / "0", root / "3.received",
                          std::filesystem::copy_options::recursive);
  }

  // Asks copy i for its promise of `t`, as a take-over round does
  // (r_fence): whether it promised, and the term it holds promised.
  std::pair<bool, copy_term> fence(std::size_t i, const copy_term& t) {
    std::pair<bool, copy_term> out{false, {}};
    (*me)->request(copies[i], 1s, r_fence_atom::value, t.n, t.by, ring_epoch)
      .receive(
        [&](bool ok, std::uint64_t, std::uint8_t, std::uint64_t, std::uint64_t, std::uint64_t,
            node_id&, std::uint64_t pn, node_id& pby) { out = {ok, copy_term{pn, pby}}; },
        [](caf::error&) {});
    return out;
  }

  ~copies_fixture() {
    for (auto& c : copies)
      caf::anon_send_exit(c, caf::exit_reason::user_shutdown);
    copies.clear(); // the system waits for every detached actor to be gone
    me.reset();
    sys.reset();
    std::filesystem::remove_all(root);
  }

  // What copy i's membership would tell it: its role, the primary, and the
  // other copies in order, those it cannot reach without a handle (empty
  // `reachable`: every copy).
  void configure(std::size_t i, copy_role role, std::optional<std::size_t> primary,
                 std::vector<bool> reachable = {}, bool filling = false) {
    std::vector<node_id> peers;
    std::vector<caf::actor> handles;
    for (std::size_t j = 0; j < nodes.size(); ++j) {
      if (j == i)
        continue;
      peers.push_back(nodes[j]);
      handles.push_back(reachable.empty() || reachable[j] ? copies[j] : caf::actor{});
    }
    (*me)->send(copies[i], r_node_atom::value, nodes[i]); // as the membership does
    (*me)->send(copies[i], r_config_atom::value, static_cast<std::uint8_t>(role),
                primary ? nodes[*primary] : node_id{}, peers, handles, w, filling, ring_epoch);
  }

  // As configure(), with the copy set given (copy i among `set`): its
  // peers are the others of `set`, in order.
  // `new_copies`: copies of `set` configured first as the primary's
  // replicas being filled (a change of view adds them).
  void configure_set(std::size_t i, copy_role role, std::size_t primary,
                     const std::vector<std::size_t>& set, bool filling = false,
                     const std::vector<std::size_t>& new_copies = {}) {
    for (auto j : new_copies)
      configure_set(j, copy_role::replica, primary, set, true);
    std::vector<node_id> peers;
    std::vector<caf::actor> handles;
    for (auto j : set)
      if (j != i) {
        peers.push_back(nodes[j]);
        handles.push_back(copies[j]);
      }
    (*me)->send(copies[i], r_node_atom::value, nodes[i]); // as the membership does
    (*me)->send(copies[i], r_config_atom::value, static_cast<std::uint8_t>(role),
                nodes[primary], peers, handles, w, filling, ring_epoch);
  }

  // Copy `primary` leads `set` (its other copies configured as its
  // replicas first), as a membership starts them.
  void lead_set(std::size_t primary, const std::vector<std::size_t>& set) {
    for (auto j : set)
      if (j != primary)
        configure_set(j, copy_role::replica, primary, set);
    configure_set(primary, copy_role::primary, primary, set);
    BOOST_REQUIRE(wait_role(primary, "primary"));
  }

  // Copy i's role and journal end (r_status).
  std::pair<std::string, std::uint64_t> status(std::size_t i) {
    std::pair<std::string, std::uint64_t> out{"?", 0};
    (*me)->request(copies[i], 1s, r_status_atom::value)
      .receive(
        [&](std::string& role, std::uint64_t end, std::uint64_t, std::vector<std::string>&,
            std::vector<std::string>&, std::vector<std::string>&) {
          out = {role, end};
        },
        [](caf::error&) {});
    return out;
  }

  // The term copy i leads under (r_status; 0 when it does not lead).
  std::uint64_t term_of(std::size_t i) {
    std::uint64_t out = 0;
    (*me)->request(copies[i], 1s, r_status_atom::value)
      .receive(
        [&](std::string&, std::uint64_t, std::uint64_t term, std::vector<std::string>&,
            std::vector<std::string>&, std::vector<std::string>&) { out = term; },
        [](caf::error&) {});
    return out;
  }

  // A copy promises no other copy's round for read_lease after it opened
  // or last took a batch from its primary (docs/REPLICATION.md, "Read
  // leases"): tests of what it promises wait that long first, so that a
  // refusal is the rule under test and not the lease. (A fixed time by
  // design, nothing to poll.)
  static void wait_lease_out() {
    std::this_thread::sleep_for(partition_replication::read_lease + 50ms);
  }

  bool wait_role(std::size_t i, const std::string& role) {
    for (int n = 0; n < 250; ++n) { // 5 s
      if (status(i).first == role)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  bool wait_end(std::size_t i, std::uint64_t end) {
    for (int n = 0; n < 250; ++n) {
      if (status(i).second == end)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // A prepare (two-phase) or one-step commit of key += d through copy i:
  // its answer (nullopt: no answer within 3 s).
  std::optional<part_time_resp> write(std::size_t i, const tx_id& tx, std::int64_t d,
                                      bool two_phase = false) {
    part_prepare_req req;
    req.tx = tx;
    req.updates = {tx_update{the_key, crdt_type::counter, counter_effect{d}, std::nullopt}};
    req.two_phase = two_phase;
    std::optional<part_time_resp> out;
    (*me)->request(copies[i], 3s, part_prepare_atom::value, encode_wire(req))
      .receive(
        [&](std::string& bytes) {
          if (auto r = decode_wire<part_time_resp>(bytes))
            out = std::move(*r);
        },
        [](caf::error&) {});
    return out;
  }

  bool acknowledged(std::size_t i, std::int64_t d) {
    auto r = write(i, tx_id{77, next_tx++}, d);
    return r && !r->err;
  }

  // Recovery's questions about `tx` to copy i: p_find or p_fence
  // (part_find_atom / part_fence_atom); nullopt: no answer in 3 s.
  template <class Atom>
  std::optional<part_find_resp> ask(std::size_t i, Atom kind, const tx_id& tx) {
    std::optional<part_find_resp> out;
    (*me)->request(copies[i], 3s, kind, encode_wire(tx))
      .receive(
        [&](std::string& bytes) {
          if (auto r = decode_wire<part_find_resp>(bytes))
            out = std::move(*r);
        },
        [](caf::error&) {});
    return out;
  }

  // A stand-in for a copy that answers nothing: it drops every message.
  caf::actor spawn_silent() {
    return spawn_self_only(*sys, [](caf::event_based_actor* self) -> caf::behavior {
      self->set_default_handler(caf::drop);
      return {[](caf::exit_msg&) {}};
    });
  }

  bool commit(std::size_t i, const tx_id& tx, std::uint64_t at) {
    bool ok = false;
    (*me)->request(copies[i], 3s, part_commit_atom::value, encode_wire(part_commit_req{tx, at}))
      .receive(
        [&](std::string& bytes) {
          auto r = decode_wire<part_ack>(bytes);
          ok = r && !r->err;
        },
        [](caf::error&) {});
    return ok;
  }

  // A read of the key at a snapshot of now (above every commit so far).
  static part_read_req read_now() {
    part_read_req req;
    req.snapshot = vector_clock{{local_dc, wall_clock_us()}};
    req.items = {read_item{the_key, crdt_type::counter, {}}};
    return req;
  }

  // The answer `reader` gets to the read it sent, if it comes within
  // `limit` (each reader sends one read, so what it gets is that answer).
  static std::optional<part_read_resp> answer_to(caf::scoped_actor& reader,
                                                 std::chrono::milliseconds limit) {
    std::optional<part_read_resp> got;
    reader->receive(
      [&](std::string& bytes) {
        if (auto r = decode_wire<part_read_resp>(bytes))
          got = std::move(*r);
      },
      caf::after(limit) >> [] {});
    return got;
  }

  // The key read through copy i at a snapshot of now: its value, or
  // nullopt when neither the copy nor (a replica) the primary it passes the
  // read on to serves it, or no answer comes within 300 ms.
  std::optional<std::int64_t> read(std::size_t i) {
    auto req = read_now();
    std::optional<std::int64_t> out;
    (*me)->request(copies[i], 300ms, part_read_atom::value, encode_wire(req))
      .receive(
        [&](std::string& bytes) {
          auto r = decode_wire<part_read_resp>(bytes);
          if (r && !r->err && r->values.size() == 1)
            out = std::get<std::int64_t>(r->values[0]);
        },
        [](caf::error&) {});
    return out;
  }

  // Copy 0 primary, the others its replicas, as a membership starts them.
  void start_with_copy_0_leading() {
    for (std::size_t i = 1; i < nodes.size(); ++i)
      configure(i, copy_role::replica, 0);
    configure(0, copy_role::primary, 0);
    BOOST_REQUIRE(wait_role(0, "primary"));
  }

  // The key read through copy i once it serves it (5 s at most): the
  // first value served, or nullopt.
  std::optional<std::int64_t> read_once_served(std::size_t i) {
    for (int n = 0; n < 250; ++n) {
      if (auto v = read(i))
        return v;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  }

  // Copy i retired by its membership (actors/copy_retirement.hpp): a
  // replica of nobody, with no peers.
  void retire(std::size_t i) {
    (*me)->send(copies[i], r_config_atom::value, static_cast<std::uint8_t>(copy_role::replica),
                node_id{}, std::vector<node_id>{}, std::vector<caf::actor>{}, w, false, ring_epoch);
  }

  struct tail {
    std::uint64_t end = 0, o = 0, q = 0;
    copy_term term;
  };
  // Copy i's journal end and its last record (r_tail).
  tail tail_of(std::size_t i) {
    tail out;
    (*me)->request(copies[i], 1s, r_tail_atom::value)
      .receive(
        [&](std::uint64_t end, std::uint64_t o, std::uint64_t q, std::uint64_t tn,
            node_id& tby) { out = tail{end, o, q, copy_term{tn, tby}}; },
        [](caf::error&) {});
    return out;
  }

  // Whether copy i holds the record at `at` with that transaction and term
  // (r_holds): 1, 0, -1 (cannot tell), or -2 (no answer).
  int holds(std::size_t i, std::uint64_t at, std::uint64_t o, std::uint64_t q,
            const copy_term& t) {
    int out = -2;
    (*me)->request(copies[i], 1s, r_holds_atom::value, at, o, q, t.n, t.by)
      .receive([&](std::int8_t h) { out = h; }, [](caf::error&) {});
    return out;
  }

  std::uint64_t slot(std::size_t i) const {
    return boards[i]->blocked_from[0].load(std::memory_order_acquire);
  }
};

struct three_copies : copies_fixture {
  three_copies() : copies_fixture(3) {}
};

struct five_copies : copies_fixture {
  five_copies() : copies_fixture(5) {}
};

// Four copies' folders for copy sets of three (w = 2): a copy set that
// changes by one node.
struct sets_of_three : copies_fixture {
  sets_of_three() : copies_fixture(4) { w = 2; }
};

// Five copies' folders for copy sets of three (w = 2): a copy set that
// changes by two nodes.
struct sets_of_three_of_five : copies_fixture {
  sets_of_three_of_five() : copies_fixture(5) { w = 2; }

  // Copy 1 leads {0, 1, 2}, with 1 and 2 acknowledged and on copy 0.
  void copy_1_leads_0_1_2_with_copy_0_current() {
    lead_set(1, {0, 1, 2});
    BOOST_REQUIRE(acknowledged(1, 1));
    BOOST_REQUIRE(acknowledged(1, 2));
    BOOST_REQUIRE(wait_end(0, status(1).second));
  }

  // Copy 1 leads {0, 1, 2} on the old view with copy 2, copy 0 out of its
  // reach, and gets +10 acknowledged.
  void copy_1_leads_without_copy_0() {
    (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
                nodes[1], std::vector<node_id>{nodes[0], nodes[2]},
                std::vector<caf::actor>{caf::actor{}, copies[2]}, w, false, ring_epoch);
    BOOST_REQUIRE(wait_role(1, "primary"));
    BOOST_REQUIRE(acknowledged(1, 10));
  }

  // The new view (epoch 2): node 3 opens the store it received to lead
  // {3, 4, 0}, node 0 keeps its own as a copy (restarted), node 4's copy is
  // filled.
  void node_3_opens_the_store_in_the_new_view() {
    const std::vector<std::size_t> new_set{3, 4, 0};
    restart(0);
    caf::anon_send_exit(copies[3], caf::exit_reason::user_shutdown);
    copies[3] = spawn_copy(3, "3.received");
    ring_epoch = 2;
    configure_set(0, copy_role::replica, 3, new_set);
    configure_set(3, copy_role::primary, 3, new_set, false, {4});
  }

  // A handoff of copy 0's store (in folder 3.received) to node 3 while
  // copy 1 leads the old set {0, 1, 2} on the old view with copy 2: the
  // new view's set is {3, 4, 0} (node 0 keeps its store as a copy, node
  // 4's copy is filled). Node 3 must not lead while copies 1 and 2 are
  // out of its reach (its round is joint with the set the store names),
  // and must lead with copy 1's journal (`served` in all) once they are in
  // reach (the membership's r_others), copy 1 then getting no more writes.
  void new_owner_waits_for_the_old_set(std::int64_t served) {
    node_3_opens_the_store_in_the_new_view();
    BOOST_TEST(!wait_role(3, "primary"),
               "node 3 leads without a promise of the old set's copies, beside copy 1");
    (*me)->send(copies[3], r_others_atom::value, std::vector<node_id>{},
                std::vector<node_id>{nodes[1], nodes[2]},
                std::vector<caf::actor>{copies[1], copies[2]});
    BOOST_REQUIRE(wait_role(3, "primary"));
    BOOST_TEST(read_once_served(3).value_or(-1) == served);
    BOOST_TEST(acknowledged(3, 4));
    BOOST_TEST(!acknowledged(1, 100), "copy 1 still gets writes on the old set");
    BOOST_TEST(read_once_served(3).value_or(-1) == served + 4);
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(replicated_copies_tests, three_copies)

// docs/RELIABILITY.md, finding 1: a primary cut off from its copies (or
// paused) while another copy took over and had writes acknowledged must
// not serve, or lead, with its older journal when it is back. Before the
// fix it kept leading (configure() made it primary again without a
// take-over round) and answered reads without the writes acknowledged
// meanwhile, then overwrote the other copies with full copies of its own
// journal (before terms) or stepped down only at its first batch (after).
BOOST_AUTO_TEST_CASE(a_primary_back_from_a_cut_leads_only_after_catching_up) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  BOOST_REQUIRE(read(0).value_or(-1) == 1);

  // Copy 0 is cut off: it sees neither other copy; they see it down, and
  // copy 1 (next in preference order) takes over.
  configure(0, copy_role::primary, 0, {true, false, false});
  configure(2, copy_role::replica, 1, {false, true, true});
  configure(1, copy_role::primary, 1, {false, true, true});
  BOOST_REQUIRE(wait_role(1, "primary"));
  BOOST_REQUIRE(acknowledged(1, 10)); // on copies 1 and 2
  // Cut off, copy 0 no longer leads: it could not have a write acknowledged
  // and does not know what the others did meanwhile.
  BOOST_TEST(status(0).first != "primary");
  BOOST_TEST(!read(0).has_value());

  // Healed: copy 0, first in preference order, leads again, after a
  // take-over round that brings it the write acknowledged meanwhile.
  configure(0, copy_role::primary, 0);
  configure(1, copy_role::replica, 0);
  configure(2, copy_role::replica, 0);
  // The first value it serves has the write acknowledged while it was away.
  auto served = read_once_served(0);
  BOOST_REQUIRE(served.has_value());
  BOOST_TEST(*served == 11);
  BOOST_REQUIRE(acknowledged(0, 100));
  BOOST_TEST(read(0).value_or(-1) == 111);
  // Nobody got a full copy of an older journal: every copy ends where the
  // primary does.
  const auto end = status(0).second;
  BOOST_TEST(wait_end(1, end));
  BOOST_TEST(wait_end(2, end));
}

// docs/RELIABILITY.md, finding 2: a copy that led and now follows keeps
// its node's safe-time slot in step with what it applies. Before the fix a
// replica never published (only its own writes did), so a copy that had
// led with a prepared transaction kept that prepare time on its node's
// board after the new primary's commit of it reached it: the node's stable
// time stayed pinned there, and its clients without a clock read old
// snapshots, then "snapshot too old".
BOOST_AUTO_TEST_CASE(a_former_primary_releases_its_nodes_stable_time_when_the_commit_reaches_it) {
  configure(0, copy_role::replica, 1);
  configure(2, copy_role::replica, 1);
  configure(1, copy_role::primary, 1);
  BOOST_REQUIRE(wait_role(1, "primary"));
  const tx_id tx{88, 1};
  auto prepared = write(1, tx, 5, true);
  BOOST_REQUIRE(prepared);
  BOOST_REQUIRE(!prepared->err);
  const auto prepare_time = prepared->time;
  BOOST_TEST(slot(1) == prepare_time); // its prepare holds its node's stable time
  BOOST_REQUIRE(wait_end(0, status(1).second));

  // Copy 0 takes over (the transaction still prepared), copy 1 follows.
  start_with_copy_0_leading();
  BOOST_REQUIRE(commit(0, tx, prepare_time));
  BOOST_TEST(read(0).value_or(-1) == 5);
  BOOST_REQUIRE(wait_end(1, status(0).second));
  BOOST_REQUIRE(wait_end(2, status(0).second));
  // The commit reached copies 1 and 2: nothing holds their nodes' stable
  // time now.
  for (std::size_t i : {1, 2}) {
    bool released = false;
    for (int n = 0; n < 100 && !released; ++n) { // 2 s
      released = slot(i) == UINT64_MAX;
      if (!released)
        std::this_thread::sleep_for(20ms);
    }
    BOOST_TEST(released, "copy " << i << "'s slot stays at " << slot(i) << " (prepare time "
                                 << prepare_time << ")");
  }
}

// A read parked at the primary (its snapshot above a prepared
// transaction) when the copy stops leading is refused at once, so that its
// coordinator retries at the new primary. Before the fix it stayed parked,
// and once the transaction was decided the copy, a replica by then, served
// it from its own state, which no longer follows every commit.
BOOST_AUTO_TEST_CASE(a_read_parked_at_a_primary_that_stops_leading_is_refused) {
  start_with_copy_0_leading();
  auto prepared = write(0, tx_id{99, 1}, 5, true);
  BOOST_REQUIRE(prepared);
  BOOST_REQUIRE(!prepared->err);
  caf::scoped_actor reader{*sys};
  reader->send(copies[0], part_read_atom::value, encode_wire(read_now())); // above the prepare
  BOOST_REQUIRE(!answer_to(reader, 200ms)); // parked behind the prepared transaction

  configure(0, copy_role::replica, 1);
  configure(2, copy_role::replica, 1);
  configure(1, copy_role::primary, 1);
  auto got = answer_to(reader, 1s); // at once (its wait bound is 2 s)
  BOOST_REQUIRE_MESSAGE(got, "the parked read got no answer within 1 s");
  BOOST_REQUIRE(got->err.has_value());
  BOOST_TEST(got->err->code() == errc::unavailable);
  BOOST_TEST_MESSAGE("refused with: " << got->err->to_string());
}

// docs/RELIABILITY.md, finding 9 (5 nodes, every nemesis): a read parked
// at a primary for a commit not yet on w copies was served, with that
// commit, at the moment the primary stopped leading: releasing its
// unreplicated tail retried the parked reads while the copy still counted
// as primary. Two sessions read a counter 2 below what they had read
// before. The role changes first now, so the read is refused.
BOOST_AUTO_TEST_CASE(a_read_parked_for_an_unreplicated_commit_is_refused_when_the_primary_moves) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  // The copies now follow another primary: copy 0's batches are refused,
  // its next commit stays on one copy, invisible.
  configure(1, copy_role::replica, 2);
  configure(2, copy_role::replica, 1);
  caf::scoped_actor writer{*sys}, reader{*sys}; // each gets its own answers
  part_prepare_req w;
  w.tx = tx_id{88, 1};
  w.updates = {tx_update{the_key, crdt_type::counter, counter_effect{5}, std::nullopt}};
  writer->send(copies[0], part_prepare_atom::value, encode_wire(w));
  std::this_thread::sleep_for(100ms); // committed in copy 0's journal
  reader->send(copies[0], part_read_atom::value, encode_wire(read_now())); // above that commit
  BOOST_REQUIRE_MESSAGE(!answer_to(reader, 300ms),
                        "the read was answered before the primary moved");
  configure(0, copy_role::replica, 1); // the membership moved the primary
  auto got = answer_to(reader, 1s);
  BOOST_REQUIRE_MESSAGE(got, "the parked read got no answer");
  BOOST_REQUIRE_MESSAGE(got->err.has_value(),
                        "served " << (got->values.empty()
                                        ? std::string{"nothing"}
                                        : std::to_string(std::get<std::int64_t>(got->values[0])))
                                  << " with a commit on one copy of three");
  BOOST_TEST(got->err->code() == errc::unavailable);
}

// A request that reaches a copy in a take-over round waits for the round
// (served once the copy leads) instead of being refused: during failovers
// most failed requests of the 5-node chaos runs were such refusals
// (docs/RELIABILITY.md, "Figures after the fixes"). One that reaches a
// replica whose primary is known is passed on to that primary and served
// there (stop 29: such refusals were a sixth of the 5-node runs' failures).
BOOST_AUTO_TEST_CASE(a_request_to_a_copy_taking_over_waits_for_the_round) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 4));
  // Copy 0 loses sight of both others: it stops leading, and its rounds
  // cannot succeed while they stay out of reach.
  configure(0, copy_role::primary, 0, {true, false, false});
  BOOST_REQUIRE(wait_role(0, "promoting"));
  caf::scoped_actor reader{*sys};
  reader->send(copies[0], part_read_atom::value, encode_wire(read_now()));
  BOOST_REQUIRE_MESSAGE(!answer_to(reader, 300ms), "refused or served while no copy led");
  configure(0, copy_role::primary, 0); // they are back: the round succeeds
  auto got = answer_to(reader, 2s);
  BOOST_REQUIRE_MESSAGE(got, "the held read got no answer once the copy led");
  BOOST_REQUIRE_MESSAGE(!got->err, got->err->to_string());
  BOOST_TEST(std::get<std::int64_t>(got->values.at(0)) == 4);
  // A replica that knows its primary passes the read on: the primary's
  // value, at once.
  caf::scoped_actor other{*sys};
  other->send(copies[1], part_read_atom::value, encode_wire(read_now()));
  auto passed = answer_to(other, 300ms);
  BOOST_REQUIRE_MESSAGE(passed, "a replica that knows its primary held the read");
  BOOST_REQUIRE_MESSAGE(!passed->err, passed->err->to_string());
  BOOST_TEST(std::get<std::int64_t>(passed->values.at(0)) == 4);
}

// A replica whose named primary it cannot reach (the primary's node is
// seen down, or cut off) holds a client request until it can route it,
// instead of refusing it at once: refused, the client retried the same
// copy in vain until a take-over round ended (docs/RELIABILITY.md, "What
// stop 29's third long run failed on"). Held, the request is passed on
// when the primary is back, or to the copy that takes over.
BOOST_AUTO_TEST_CASE(a_replica_holds_a_request_until_it_reaches_a_primary) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 6));
  configure(1, copy_role::replica, 0, {false, true, true}); // copy 0 out of reach
  caf::scoped_actor reader{*sys};
  reader->send(copies[1], part_read_atom::value, encode_wire(read_now()));
  BOOST_REQUIRE_MESSAGE(!answer_to(reader, 300ms),
                        "refused or served while the primary was out of reach");
  configure(1, copy_role::replica, 0); // back in reach: the read is passed on
  auto got = answer_to(reader, 2s);
  BOOST_REQUIRE_MESSAGE(got, "the held read got no answer once the primary was in reach");
  BOOST_REQUIRE_MESSAGE(!got->err, got->err->to_string());
  BOOST_TEST(std::get<std::int64_t>(got->values.at(0)) == 6);

  // Out of reach again, and copy 2 takes over: the held read goes to it.
  const std::vector<bool> without_0{false, true, true};
  configure(1, copy_role::replica, 0, without_0);
  caf::scoped_actor later{*sys};
  later->send(copies[1], part_read_atom::value, encode_wire(read_now()));
  BOOST_REQUIRE_MESSAGE(!answer_to(later, 300ms),
                        "refused or served while the primary was out of reach");
  configure(2, copy_role::primary, 2, without_0);
  BOOST_REQUIRE(wait_role(2, "primary"));
  configure(1, copy_role::replica, 2, without_0);
  auto after = answer_to(later, 3s);
  BOOST_REQUIRE_MESSAGE(after, "the held read got no answer once copy 2 led");
  BOOST_REQUIRE_MESSAGE(!after->err, after->err->to_string());
  BOOST_TEST(std::get<std::int64_t>(after->values.at(0)) == 6);
}

// docs/RELIABILITY.md, "The participant fence", across a failover of the
// participant: the fence is answered only once it is on w copies, so the
// copy that takes over refuses the coordinator's commit too, and takes
// the commit recovery proved from another participant.
BOOST_AUTO_TEST_CASE(a_fence_survives_a_failover_of_the_participant) {
  start_with_copy_0_leading();
  const tx_id tx{88, 1};
  auto prepared = write(0, tx, 3, true);
  BOOST_REQUIRE(prepared && !prepared->err);
  auto fenced = ask(0, part_fence_atom::value, tx);
  BOOST_REQUIRE_MESSAGE(fenced, "no answer to the fence");
  BOOST_REQUIRE_MESSAGE(!fenced->err, fenced->err->to_string());
  BOOST_TEST(fenced->fenced);
  // Copy 0 is lost; copy 1 takes over with copy 2.
  const std::vector<bool> without_0{false, true, true};
  configure(2, copy_role::replica, 1, without_0);
  configure(1, copy_role::primary, 1, without_0);
  BOOST_REQUIRE(wait_role(1, "primary"));
  const auto at = prepared->time + 1;
  BOOST_TEST(!commit(1, tx, at), "the new primary took the coordinator's commit");
  bool proven = false;
  (*me)->request(copies[1], 3s, part_commit_atom::value, encode_wire(part_commit_req{tx, at, true}))
    .receive(
      [&](std::string& bytes) {
        auto r = decode_wire<part_ack>(bytes);
        proven = r && !r->err;
      },
      [](caf::error&) {});
  BOOST_TEST(proven, "the new primary refused the commit recovery proved");
  BOOST_TEST(read_once_served(1).value_or(-1) == 3);
}

// A request passed on by a replica is passed on once: a replica whose
// named primary is itself a replica (the two views disagree for a moment)
// gets a refusal back at once, not a request going round between them. A
// write through a replica is passed on and applied by the primary once.
BOOST_AUTO_TEST_CASE(a_request_is_passed_on_to_the_primary_once) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 2));
  // Through replica 2: passed on to copy 0, which leads.
  BOOST_REQUIRE(acknowledged(2, 3));
  caf::scoped_actor reader{*sys};
  reader->send(copies[1], part_read_atom::value, encode_wire(read_now()));
  auto got = answer_to(reader, 1s);
  BOOST_REQUIRE_MESSAGE(got, "no answer through replica 1");
  BOOST_REQUIRE_MESSAGE(!got->err, got->err->to_string());
  BOOST_TEST(std::get<std::int64_t>(got->values.at(0)) == 5);
  // Copies 1 and 2 each name the other as primary: refused, once.
  configure(1, copy_role::replica, 2);
  configure(2, copy_role::replica, 1);
  BOOST_REQUIRE(wait_role(1, "replica"));
  BOOST_REQUIRE(wait_role(2, "replica"));
  reader->send(copies[1], part_read_atom::value, encode_wire(read_now()));
  auto refused = answer_to(reader, 1s);
  BOOST_REQUIRE_MESSAGE(refused, "no answer: the read went round between the replicas");
  BOOST_REQUIRE(refused->err.has_value());
  BOOST_TEST(refused->err->code() == errc::unavailable);
  BOOST_TEST(refused->err->to_string().find("a replica") != std::string::npos,
             refused->err->to_string());
}

// docs/REPLICATION.md, "Filling copies": a copy made empty (a stale one
// replaced, one a join or a removal adds) lacks writes acknowledged before
// it was made, so its promise must not count in a take-over round. Here
// +1 was acknowledged by copies 0 and 2 while copy 1 missed it; copy 2 is
// then replaced by an empty copy and copy 0 is lost. Before the fix copy 1
// took over with the empty copy's promise, without the +1.
BOOST_AUTO_TEST_CASE(an_empty_copy_being_filled_does_not_let_a_round_skip_acknowledged_writes) {
  configure(1, copy_role::replica, std::nullopt); // follows nobody: misses what 0 writes
  configure(2, copy_role::replica, 0);
  configure(0, copy_role::primary, 0);
  BOOST_REQUIRE(wait_role(0, "primary"));
  BOOST_REQUIRE(acknowledged(0, 1)); // on copies 0 and 2
  BOOST_REQUIRE(wait_end(2, status(0).second));

  replace(2);
  configure(2, copy_role::replica, 1, {false, true, true}, true); // filling
  configure(1, copy_role::primary, 1, {false, true, true});      // copy 0 is gone
  for (int n = 0; n < 50; ++n) { // 1 s
    auto v = read(1);
    BOOST_TEST(v.value_or(1) >= 1, "copy 1 served " << *v << " without the acknowledged +1");
    if (v)
      break;
    std::this_thread::sleep_for(20ms);
  }
  BOOST_TEST(status(1).first != "primary");
  // Once copy 0 is back, copy 1 takes over with the +1 (pulled from it):
  // every copy promised, the one being filled too.
  configure(1, copy_role::primary, 1);
  configure(0, copy_role::replica, 1);
  BOOST_TEST(read_once_served(1).value_or(-1) == 1);
}

// The other side of the rule above: when every copy but one is being
// filled and all are reachable, the one left takes over with their
// promises (waiting would bring nothing more back). Before, filling copies
// never promised, no copy led, and nothing filled them: the partition
// stayed unserved with every node up (finding 3's form after the fix).
BOOST_AUTO_TEST_CASE(copies_all_being_filled_but_one_let_it_lead_once_every_copy_answers) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 7));
  replace(1);
  replace(2);
  configure(1, copy_role::replica, 0, {true, true, true}, true);
  configure(2, copy_role::replica, 0, {true, true, true}, true);
  // Copy 0 goes through a take-over round again (it lost sight of the
  // others for a moment): only copies being filled can promise.
  configure(0, copy_role::primary, 0, {true, false, false});
  configure(0, copy_role::primary, 0);
  BOOST_TEST(read_once_served(0).value_or(-1) == 7);
  // And the copies being filled get everything.
  BOOST_TEST(wait_end(1, status(0).second));
  BOOST_TEST(wait_end(2, status(0).second));
}

// docs/REPLICATION.md, "Terms in the journal": a take-over round picks the
// copy whose last record has the highest term, then the longest, not the
// longest. Five copies, w = 3. Copy 0 leads (term 1) and, cut off from the
// others, writes a tail of its own (+100 three times, on no other copy).
// Copy 1 takes over (term 2) with copies 2 and 3, and +10 is acknowledged
// at the same positions, on copies 1, 2 and 3; copy 4 missed both. Copy 1
// is lost and copy 4 takes over with the promises of copies 0 and 2. Before
// terms, copy 4 pulled the longest journal, copy 0's tail, and the +10 was
// gone (copy 2, then found diverged, got a full copy of it).
BOOST_FIXTURE_TEST_CASE(a_round_prefers_the_later_term_to_the_longer_journal, five_copies) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1)); // on every copy (w = 3; the others follow)
  for (std::size_t i = 1; i < 5; ++i)
    BOOST_REQUIRE(wait_end(i, status(0).second));

  // Copy 0 is cut off from the others, which no longer take its batches;
  // copy 4 follows nobody (it misses everything from here).
  configure(4, copy_role::replica, std::nullopt);
  configure(1, copy_role::replica, 2);
  configure(2, copy_role::replica, 1);
  configure(3, copy_role::replica, 1);
  caf::scoped_actor writer{*sys};
  const auto end_before = status(0).second;
  for (std::uint64_t n = 1; n <= 3; ++n) {
    part_prepare_req req;
    req.tx = tx_id{66, n};
    req.updates = {tx_update{the_key, crdt_type::counter, counter_effect{100}, std::nullopt}};
    writer->send(copies[0], part_prepare_atom::value, encode_wire(req));
  }
  bool tail_written = false;
  for (int n = 0; n < 250 && !tail_written; ++n) { // 5 s
    tail_written = status(0).second >= end_before + 6; // 3 x (update, commit)
    if (!tail_written)
      std::this_thread::sleep_for(20ms);
  }
  BOOST_REQUIRE_MESSAGE(tail_written, "copy 0 did not journal its tail");
  // Its membership stops naming it (it would try to lead again, and take
  // part in the rounds below).
  configure(0, copy_role::replica, std::nullopt);

  // Copy 1 takes over with copies 2 and 3 (term 2); +10 on 1, 2 and 3.
  const std::vector<bool> with_1_2_3{false, true, true, true, false};
  configure(2, copy_role::replica, 1, with_1_2_3);
  configure(3, copy_role::replica, 1, with_1_2_3);
  configure(1, copy_role::primary, 1, with_1_2_3);
  BOOST_REQUIRE(wait_role(1, "primary"));
  BOOST_REQUIRE(acknowledged(1, 10));
  const auto end_1 = status(1).second;
  BOOST_REQUIRE(wait_end(2, end_1));
  BOOST_REQUIRE(wait_end(3, end_1));
  BOOST_REQUIRE_MESSAGE(status(0).second > end_1,
                        "copy 0's journal (" << status(0).second
                                             << ") is not the longer one (copy 1: " << end_1
                                             << "): the test shows nothing");

  // Copy 1 is lost; copy 4 takes over, with the promises of copies 0 and 2.
  caf::anon_send_exit(copies[1], caf::exit_reason::kill);
  const std::vector<bool> with_0_2_4{true, false, true, false, true};
  configure(0, copy_role::replica, 4, with_0_2_4);
  configure(2, copy_role::replica, 4, with_0_2_4);
  configure(4, copy_role::primary, 4, with_0_2_4);
  auto served = read_once_served(4);
  BOOST_REQUIRE_MESSAGE(served.has_value(), "copy 4 did not take over");
  BOOST_TEST(*served == 11); // +1 and the acknowledged +10; copy 0's tail was never acknowledged
  // Copy 2 keeps the +10 (it is not overwritten), and copy 0 gets the
  // primary's journal in place of its tail.
  BOOST_REQUIRE(acknowledged(4, 1000));
  BOOST_TEST(read(4).value_or(-1) == 1011);
  const auto end_4 = status(4).second;
  BOOST_TEST(wait_end(2, end_4));
  BOOST_TEST(wait_end(0, end_4));
}

// Raft's Figure 8 rule (docs/REPLICATION.md, "Terms in the journal"): a
// copy that leads after a take-over round first writes a record of its
// term, and every copy's journal then holds it at the same position.
BOOST_AUTO_TEST_CASE(a_new_primary_writes_a_term_record_first) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 2));
  const auto end_0 = status(0).second;
  BOOST_REQUIRE(wait_end(1, end_0));
  BOOST_REQUIRE(wait_end(2, end_0));
  configure(0, copy_role::replica, 1);
  configure(2, copy_role::replica, 1);
  configure(1, copy_role::primary, 1);
  BOOST_REQUIRE(wait_role(1, "primary"));
  // The term record, and nothing else yet: one record more on every copy.
  BOOST_TEST(wait_end(1, end_0 + 1));
  BOOST_TEST(wait_end(0, end_0 + 1));
  BOOST_TEST(wait_end(2, end_0 + 1));
  BOOST_TEST(read_once_served(1).value_or(-1) == 2);
}

// Raft's Figure 8 rule (docs/REPLICATION.md, "Terms in the journal"):
// after a take-over round, what the new primary adopted counts as on w
// copies only once its term record is. Here copy 1 takes over with the
// promise of a copy (played by the test) that holds the whole journal, at
// the same term, and never takes a batch: its term record stays on one
// copy, so no read is served. Before the rule, the round's answer made the
// journal count as on 2 copies and copy 1 served at once. Once copy 1
// reaches a real copy, the term record is on 2 copies and it serves.
BOOST_AUTO_TEST_CASE(a_new_primary_serves_reads_once_its_term_record_is_on_w_copies) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 2)); // tx <77,1>: its commit is the last record
  const auto end_0 = status(0).second;
  BOOST_REQUIRE(wait_end(1, end_0));
  BOOST_REQUIRE(wait_end(2, end_0));
  const copy_term term_0{term_of(0), nodes[0]};
  BOOST_REQUIRE(term_0.n != 0);
  configure(0, copy_role::replica, 1);
  configure(2, copy_role::replica, 1);
  // A copy that promises any round with copy 0's journal (same end, same
  // last record and term) and answers no batch.
  auto mute = spawn_self_only(*sys, [=](caf::event_based_actor*) -> caf::behavior {
    return {
      [=](r_fence_atom, std::uint64_t n, node_id& by, std::uint64_t)
        -> std::tuple<bool, std::uint64_t, std::uint8_t, std::uint64_t, std::uint64_t,
                      std::uint64_t, node_id, std::uint64_t, node_id> {
        return {true, end_0, static_cast<std::uint8_t>(copy_role::replica), 77, 1, term_0.n,
                term_0.by, n, by};
      },
    };
  });
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[1], std::vector<node_id>{nodes[0], nodes[2]},
              std::vector<caf::actor>{mute, caf::actor{}}, w, false, ring_epoch);
  BOOST_REQUIRE(wait_role(1, "primary"));
  BOOST_TEST(!read(1).has_value(), "copy 1 served a read before its term record was on 2 copies");
  configure(1, copy_role::primary, 1); // the real copies
  BOOST_TEST(read_once_served(1).value_or(-1) == 2);
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}

// Persistent promises (docs/REPLICATION.md; Raft keeps currentTerm on
// stable storage, Sec. 5.1): a copy that promised a round's term keeps the
// promise across a restart, so a round of a lower term cannot count it too
// (two rounds could otherwise each get a quorum: two primaries). Before,
// a restarted copy had promised nothing and promised the lower term.
BOOST_AUTO_TEST_CASE(a_copy_keeps_its_promise_across_a_restart) {
  const copy_term high{5'000'000'000'000'000ULL, "tally@127.0.0.1:9"};
  const copy_term low{high.n - 1, "tally@127.0.0.1:8"};
  wait_lease_out();
  auto first = fence(1, high);
  BOOST_REQUIRE(first.first);
  restart(1);
  wait_lease_out();
  auto after = fence(1, low);
  BOOST_TEST(!after.first, "the restarted copy promised a lower term");
  BOOST_TEST(after.second == high);
  // A higher round still gets it, and that promise is kept in turn.
  const copy_term higher{high.n + 1, "tally@127.0.0.1:8"};
  BOOST_TEST(fence(1, higher).first);
  restart(1);
  wait_lease_out();
  BOOST_TEST(!fence(1, high).first);
}

// Rounds from outside the copy set (docs/REPLICATION.md): a configured
// copy promises only to a copy of its own copy set. A leftover copy of an
// older ring epoch (or a node whose view is behind) gathered a promise
// from a copy of the current set in a loaded 5-node chaos run, while the
// real primary wrote to the others: two primaries at once. Before, any
// node's round got the promise.
BOOST_AUTO_TEST_CASE(a_copy_promises_only_to_a_copy_of_its_own_copy_set) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  const auto high = term_of(0) + 1000;
  wait_lease_out(); // copy 1's grant to copy 0 ran out: only the copy-set rule refuses
  auto outsider = fence(1, copy_term{high, "tally@127.0.0.1:9"});
  BOOST_TEST(!outsider.first, "a copy promised a round of a node outside its copy set");
  BOOST_TEST(wait_role(0, "primary")); // the primary leads on
  BOOST_TEST(acknowledged(0, 2));      // and gets writes on 2 copies
  wait_lease_out();
  auto member = fence(1, copy_term{high + 1, nodes[2]});
  BOOST_TEST(member.first);
}

// Rounds across two copy sets (docs/REPLICATION.md): copy 0 leads the set
// {0, 1, 2} (ring epoch 1); a new view (epoch 2) makes the set {0, 1, 3},
// copy 3 new and being filled. Copy 0 leads the new set only after a
// take-over round (a new term), which copy 1 promises (copy 3's promise
// counts only with every other's). Copies 1 and 2 are left on the old view
// (their nodes have not heard of epoch 2): copy 2, whose old view names it
// primary (as if copy 0 were down there), starts a round of epoch 1 under
// a higher term. Copy 1 refuses it (it promised a round of epoch 2) and
// copy 0 too (copy 2 is outside its set), so copy 2 never leads and copy 0
// keeps getting writes acknowledged. Before epochs and the round, copy 0
// kept leading under its old term, copy 1 promised copy 2's round (copy 2
// is in copy 1's old set), and two primaries led at once: {2, 1} on the
// old set and {0, 3} on the new one.
BOOST_FIXTURE_TEST_CASE(a_primary_whose_copy_set_changes_leads_it_after_a_round_of_the_new_view,
                        sets_of_three) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{0, 1, 3};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  const auto old_term = term_of(0);
  BOOST_REQUIRE(old_term != 0);

  ring_epoch = 2;
  configure_set(3, copy_role::replica, 0, new_set, true);
  configure_set(0, copy_role::primary, 0, new_set);
  std::uint64_t new_term = old_term;
  for (int n = 0; n < 250 && (new_term == old_term || new_term == 0); ++n) {
    std::this_thread::sleep_for(20ms);
    new_term = term_of(0);
  }
  BOOST_TEST(new_term > old_term, "copy 0 leads the new set under its old term "
                                    << old_term << " (no round)");
  BOOST_REQUIRE(wait_role(0, "primary"));
  BOOST_REQUIRE(acknowledged(0, 2));

  // Copy 2, on the old view, tries to lead the old set.
  ring_epoch = 1;
  wait_lease_out(); // copy 1's grant to copy 0 ran out: the lease refuses nothing
  configure_set(2, copy_role::primary, 2, old_set);
  BOOST_TEST(!wait_role(2, "primary"), "copy 2 leads the old set beside copy 0");
  BOOST_TEST(acknowledged(0, 4), "copy 0 no longer gets writes on 2 copies");
  // Whatever the term, a round of the old view gets no promise from copy 1.
  auto late = fence(1, copy_term{new_term + 1'000'000, nodes[2]});
  BOOST_TEST(!late.first, "copy 1 promised a round of the old view after one of the new");
  const auto value = read_once_served(0);
  BOOST_TEST(value.value_or(-1) == 7);
}

// Joint rounds (docs/REPLICATION.md): copy 0 leads the set {0, 1, 2}
// (ring epoch 1); a new view (epoch 2) replaces two of its nodes: the set
// is {0, 3, 4}, copies 3 and 4 new and being filled. The network splits
// nodes 0, 3 and 4 from nodes 1 and 2, which stay on the old view, where
// copy 1 tries to lead the old set. Before joint rounds copy 0's round
// counted copies 3 and 4 (every copy of the new set promised) and copy 1
// led the old set with copy 2: two write quorums that do not meet. Now
// copy 0's round also needs 2 of the 3 copies of the set it led (itself
// and copy 1 or 2), which promise the new view.
BOOST_FIXTURE_TEST_CASE(a_copy_set_that_changes_by_two_nodes_is_taken_over_by_a_joint_round,
                        sets_of_three_of_five) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{0, 3, 4};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  const auto old_term = term_of(0);

  ring_epoch = 2;
  configure_set(0, copy_role::primary, 0, new_set, false, {3, 4});
  std::uint64_t new_term = old_term;
  for (int n = 0; n < 250 && (new_term == old_term || new_term == 0); ++n) {
    std::this_thread::sleep_for(20ms);
    new_term = term_of(0);
  }
  BOOST_TEST(new_term > old_term);
  BOOST_REQUIRE(wait_role(0, "primary"));
  BOOST_REQUIRE(acknowledged(0, 2));

  // Copy 1, on the old view and cut off from node 0, tries to lead the
  // old set.
  ring_epoch = 1;
  wait_lease_out(); // copy 2's grant to copy 0 ran out: only the fence refuses
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[1], std::vector<node_id>{nodes[0], nodes[2]},
              std::vector<caf::actor>{caf::actor{}, copies[2]}, w, false, ring_epoch);
  BOOST_TEST(!wait_role(1, "primary"), "copy 1 leads the old set beside copy 0");
  BOOST_TEST(!acknowledged(1, 100), "a write was acknowledged on the old set");
  auto late = fence(2, copy_term{new_term + 1'000'000, nodes[1]});
  BOOST_TEST(!late.first, "copy 2 promised a round of the old view after the joint round");
  BOOST_TEST(acknowledged(0, 4), "copy 0 no longer gets writes on 2 copies");
  BOOST_TEST(read_once_served(0).value_or(-1) == 7);
}

// A joint round leads with the most up-to-date journal of both sets:
// while copy 0 (primary of {0, 1, 2}) was cut off and wrote nothing,
// copies 1 and 2 elected copy 1 on the old view and had +100 acknowledged
// on {1, 2}. Then a new view makes the set {0, 3, 4}: copy 0's joint round
// hears from copies 1 and 2, which the new set drops, and pulls copy 1's
// journal before it leads. Counted for the old set only, their journals
// were not looked at, and copy 0 led without the acknowledged +100.
BOOST_FIXTURE_TEST_CASE(a_joint_round_leads_with_writes_acknowledged_on_the_dropped_copies,
                        sets_of_three_of_five) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{0, 3, 4};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  // Copies 1 and 2, cut off from copy 0, elect copy 1 (old view).
  wait_lease_out();
  configure_set(2, copy_role::replica, 1, old_set);
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[1], std::vector<node_id>{nodes[0], nodes[2]},
              std::vector<caf::actor>{caf::actor{}, copies[2]}, w, false, ring_epoch);
  BOOST_REQUIRE(wait_role(1, "primary"));
  BOOST_REQUIRE(acknowledged(1, 100));
  BOOST_REQUIRE(wait_role(0, "primary")); // copy 0 wrote nothing: it still thinks it leads

  ring_epoch = 2;
  configure_set(0, copy_role::primary, 0, new_set, false, {3, 4});
  const auto served = read_once_served(0);
  BOOST_TEST(served.value_or(-1) == 101, "copy 0 serves " << served.value_or(-1)
                                            << " without the write acknowledged on {1, 2}");
  BOOST_TEST(acknowledged(0, 1000));
  BOOST_TEST(read_once_served(0).value_or(-1) == 1101);
}

// A replica whose set changes by two nodes and that is to lead the new
// set runs a joint round too: copy 0 leads {0, 1, 2} (epoch 1); copy 1,
// cut off from copies 0 and 2, gets a view (epoch 2) whose set {1, 3, 4}
// it is to lead. Copies 0 and 2, on the old view, go on: +10 is
// acknowledged on them. Copy 1 does not lead while it cannot reach them
// (before, it led at once with copies 3 and 4: two primaries). Once its
// membership sees their copies again (r_others), its joint round gets
// their promises and their journal: it serves 11, and copy 0 no longer
// leads.
BOOST_FIXTURE_TEST_CASE(a_replica_that_leads_a_set_changed_by_two_nodes_runs_a_joint_round,
                        sets_of_three_of_five) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{1, 3, 4};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  // The cut: copy 1 sees neither copy 0 nor copy 2.
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::replica),
              nodes[0], std::vector<node_id>{nodes[0], nodes[2]},
              std::vector<caf::actor>{caf::actor{}, caf::actor{}}, w, false, ring_epoch);
  ring_epoch = 2;
  configure_set(1, copy_role::primary, 1, new_set, false, {3, 4});
  BOOST_TEST(acknowledged(0, 10), "the old set's primary no longer gets writes on {0, 2}");
  BOOST_TEST(!wait_role(1, "primary"), "copy 1 leads the new set beside copy 0");
  // Healed: copy 1's membership sees copies 0 and 2 again.
  (*me)->send(copies[1], r_others_atom::value, std::vector<node_id>{},
              std::vector<node_id>{nodes[0], nodes[2], nodes[3], nodes[4]},
              std::vector<caf::actor>{copies[0], copies[2], copies[3], copies[4]});
  const auto served = read_once_served(1);
  BOOST_TEST(served.value_or(-1) == 11, "copy 1 serves " << served.value_or(-1));
  BOOST_TEST(acknowledged(1, 100));
  BOOST_TEST(status(0).first != "primary", "copy 0 still leads the old set");
  BOOST_TEST(read_once_served(1).value_or(-1) == 111);
}

// A joint round whose dropped copies do not answer waits for them: they
// could be alive and cut off, electing a primary of their own. Copies on
// nodes removed from the cluster (`tally cluster remove`, on the
// operator's word that they are dead; the membership sends them in
// r_others with every r_config) count as gone: two nodes of three removed
// at once leave no majority of the old set otherwise, and the partition
// would never be served again.
BOOST_FIXTURE_TEST_CASE(a_joint_round_counts_the_copies_of_removed_nodes_as_gone,
                        sets_of_three_of_five) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{0, 3, 4};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  for (std::size_t i : {1, 2})
    caf::anon_send_exit(copies[i], caf::exit_reason::kill);
  ring_epoch = 2;
  configure_set(0, copy_role::primary, 0, new_set, false, {3, 4});
  BOOST_TEST(!wait_role(0, "primary"), "copy 0 led without the set it led before");
  // Nodes 1 and 2 are removed.
  (*me)->send(copies[0], r_others_atom::value, std::vector<node_id>{nodes[1], nodes[2]},
              std::vector<node_id>{}, std::vector<caf::actor>{});
  BOOST_TEST(wait_role(0, "primary"));
  BOOST_TEST(acknowledged(0, 2));
  BOOST_TEST(read_once_served(0).value_or(-1) == 3);
}

// Handoffs across two copy sets (docs/REPLICATION.md): copy 0 leads the
// set {0, 1, 2} (ring epoch 1); a new view (epoch 2) gives the partition
// to node 3, with the set {3, 0, 1}. Copy 0 is drained for the handoff (as
// its membership does), its store goes to node 3 and stays at node 0 as
// its copy ("Handed-off stores kept as copies"). The network splits
// nodes 0 and 3 from nodes 1 and 2: node 3 leads the new set with copy 0,
// and copies 1 and 2 are left on the old view, where copy 1 tries to lead
// the old set. Before the fence
// it did, with copy 2's promise: two primaries, {3, 0} on the new set and
// {1, 2} on the old one, two write quorums that do not meet (node 3's
// round had counted itself and one copy of the old set). With it, the
// drained primary's round of epoch 2 was promised by copies 1 and 2 and
// saved with the store: copy 1 starts no round of the old view and copy 2
// promises none.
BOOST_FIXTURE_TEST_CASE(a_handed_off_partition_fences_its_old_copy_set_under_the_new_view,
                        sets_of_three) {
  const std::vector<std::size_t> old_set{0, 1, 2}, new_set{3, 0, 1};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  BOOST_REQUIRE(acknowledged(0, 2));
  const auto old_term = term_of(0);

  // The handoff: drained under the new view's epoch, the store shipped.
  BOOST_REQUIRE(drain(0, 15s));
  ship_0_to_3();
  // Node 0 keeps the store as its copy (reopened), node 3 serves the copy
  // it received; node 3 cannot reach node 1.
  restart(0);
  caf::anon_send_exit(copies[3], caf::exit_reason::user_shutdown);
  copies[3] = spawn_copy(3, "3.received");
  ring_epoch = 2;
  configure_set(0, copy_role::replica, 3, new_set);
  (*me)->send(copies[3], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[3], std::vector<node_id>{nodes[0], nodes[1]},
              std::vector<caf::actor>{copies[0], caf::actor{}}, w, false, ring_epoch);
  BOOST_REQUIRE(wait_role(3, "primary"));
  BOOST_TEST(term_of(3) > old_term);
  BOOST_REQUIRE(acknowledged(3, 4));

  // Copy 1, on the old view, tries to lead the old set.
  ring_epoch = 1;
  wait_lease_out(); // copy 2's grant to copy 0 ran out: only the fence refuses
  // Nodes 0 and 3 on one side, 1 and 2 on the other.
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[1], std::vector<node_id>{nodes[0], nodes[2]},
              std::vector<caf::actor>{caf::actor{}, copies[2]}, w, false, ring_epoch);
  BOOST_TEST(!wait_role(1, "primary"), "copy 1 leads the old set beside copy 3");
  BOOST_TEST(!acknowledged(1, 100), "a write was acknowledged on the old set");
  // Whatever the term, a round of the old view gets no promise from copy 2.
  auto late = fence(2, copy_term{term_of(3) + 1'000'000, nodes[1]});
  BOOST_TEST(!late.first, "copy 2 promised a round of the old view after the handoff");
  BOOST_TEST(acknowledged(3, 8), "copy 3 no longer gets writes on 2 copies");
  BOOST_TEST(read_once_served(3).value_or(-1) == 15);
}

// A handoff whose fence gave up (docs/REPLICATION.md, "Handoffs whose
// fence gave up"): copy 0 leads {0, 1, 2} and is handed off while copies 1
// and 2 are out of its reach; it closes without fencing them, and its
// store keeps the set it led. Copies 1 and 2 come back on the old view and
// lead it on their own (1 primary, 2 promising). The new owner, node 3,
// with the shipped store, leads {3, 4, 0} (copy 4 being filled, copy 0
// the sender's kept store): its round is joint with the old set, so it
// leads only once a copy of that set besides the store it holds has
// promised or holds the new view, and then with the writes acknowledged
// on the old set meanwhile. Before, copy 0's promise was enough for it:
// two primaries under two views, each with writes on two copies.
BOOST_FIXTURE_TEST_CASE(a_handoff_whose_fence_gave_up_leaves_a_joint_round_to_the_new_owner,
                        sets_of_three_of_five) {
  const std::vector<std::size_t> old_set{0, 1, 2};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  BOOST_REQUIRE(acknowledged(0, 2));
  BOOST_REQUIRE(wait_end(1, status(0).second));
  BOOST_REQUIRE(wait_end(2, status(0).second));

  // Copies 1 and 2 are out of reach: the fence gives up (after 2 s).
  for (std::size_t i : {1, 2}) {
    (*me)->monitor(copies[i]);
    caf::anon_send_exit(copies[i], caf::exit_reason::user_shutdown);
    (*me)->receive([](caf::down_msg&) {}, caf::after(5s) >> [] {});
  }
  BOOST_REQUIRE(drain(0, 15s));
  ship_0_to_3();

  // Back on the old view, out of reach of nodes 0 and 3: copy 1 leads the
  // old set with copy 2.
  copies[1] = spawn_copy(1, "1");
  copies[2] = spawn_copy(2, "2");
  wait_lease_out(); // a copy promises no round for a lease's time after it opened
  configure_set(2, copy_role::replica, 1, old_set);
  copy_1_leads_without_copy_0();

  new_owner_waits_for_the_old_set(13);
}

// The same with a store whose copy did not lead at its handoff (another
// copy of its set had taken over): copy 1 leads {0, 1, 2}, copy 0's store
// is drained and shipped (it fences nothing) and names the set it is in;
// copy 1 goes on leading {1, 2}, out of reach of nodes 0 and 3. Before,
// the store named no set (copy 0 never led) and node 3 led with copy 0's
// promise beside copy 1.
BOOST_FIXTURE_TEST_CASE(a_handed_off_store_that_did_not_lead_leaves_a_joint_round_too,
                        sets_of_three_of_five) {
  copy_1_leads_0_1_2_with_copy_0_current();
  BOOST_REQUIRE(drain(0, 5s));
  ship_0_to_3();
  copy_1_leads_without_copy_0();
  new_owner_waits_for_the_old_set(13);
}

// The same with a store handed off closed: copy 0 follows copy 1 in
// {0, 1, 2}, its node restarts and its store is shipped unopened, never
// drained (nothing runs to save the set then). A copy saves the set it
// follows once its view's primary ships to it, so the store still names
// it; before, it named none and node 3 led at once with copy 0's promise.
BOOST_FIXTURE_TEST_CASE(a_store_handed_off_closed_names_the_set_its_copy_followed,
                        sets_of_three_of_five) {
  copy_1_leads_0_1_2_with_copy_0_current();
  restart(0); // reopened, never configured: as after its node's restart
  ship_0_to_3();
  copy_1_leads_without_copy_0();
  new_owner_waits_for_the_old_set(13);
}

// A store that did not lead, shipped to a node its set names (while a
// cluster forms, a set can name a node before its copy there is open):
// copy 1 leads {0, 1, 3} with copy 0 (node 3's copy not open), copy 0's
// store is drained and shipped to node 3. Node 3 counts as its own copy of
// that set and asks node 0's kept copy: it leads with that promise, copy 1
// out of its reach, and serves what copy 1 acknowledged (copy 0 holds it).
// A store that named no node of its own (before the copy knew its node:
// r_node) left node 3 waiting for a copy that could never answer: a 30 s
// stall of `cluster_tests/with_three_copies_a_kill_9_right_after_a_restart_fails_over_at_once`
// in stop 36.
BOOST_FIXTURE_TEST_CASE(a_store_shipped_to_a_node_its_set_names_counts_that_node_and_the_senders_copy,
                        sets_of_three_of_five) {
  for (std::size_t i : {0, 1})
    (*me)->send(copies[i], r_node_atom::value, nodes[i]);
  (*me)->send(copies[0], r_config_atom::value, static_cast<std::uint8_t>(copy_role::replica),
              nodes[1], std::vector<node_id>{nodes[1], nodes[3]},
              std::vector<caf::actor>{copies[1], caf::actor{}}, w, false, ring_epoch);
  (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[1], std::vector<node_id>{nodes[0], nodes[3]},
              std::vector<caf::actor>{copies[0], caf::actor{}}, w, false, ring_epoch);
  BOOST_REQUIRE(wait_role(1, "primary"));
  BOOST_REQUIRE(acknowledged(1, 1));
  BOOST_REQUIRE(acknowledged(1, 2));
  BOOST_REQUIRE(wait_end(0, status(1).second));
  BOOST_REQUIRE(drain(0, 5s));
  ship_0_to_3();
  node_3_opens_the_store_in_the_new_view();
  BOOST_REQUIRE(wait_role(3, "primary"));
  BOOST_TEST(read_once_served(3).value_or(-1) == 3);
  BOOST_TEST(acknowledged(3, 4));
  BOOST_TEST(!acknowledged(1, 100), "copy 1 still gets writes on the old set");
  BOOST_TEST(read_once_served(3).value_or(-1) == 7);
}

// A take-over round's answers can come after its copy has been
// configured again (here: retired, no copy set at all, as the membership
// retires a copy its set no longer names). Such a late answer is dropped;
// before, a promise read the copy list by the index it was asked under,
// past the end of the new, empty list: a segfault of tallyd in the
// six-node start of cluster_remove_tests. Copies 1 and 2 are stand-ins
// that promise any round 300 ms after they are asked, with a journal more
// up-to-date than copy 0's (the answer the round keeps, by its copy's
// handle and node).
BOOST_AUTO_TEST_CASE(a_rounds_answers_after_a_reconfiguration_are_dropped) {
  auto slow = [this] {
    return sys->spawn<caf::detached>(
      [](caf::event_based_actor*, caf::unit_t) -> caf::behavior {
        return {[](r_fence_atom, std::uint64_t n, node_id& by, std::uint64_t) {
          std::this_thread::sleep_for(300ms);
          // A journal longer than copy 0's, ending with a record of the
          // round's term: the most up-to-date answer.
          return caf::make_message(true, std::uint64_t{1000}, std::uint8_t{0},
                                   std::numeric_limits<std::uint64_t>::max(),
                                   std::numeric_limits<std::uint64_t>::max(), n, by, n, by);
        }};
      },
      caf::unit);
  };
  const auto one = slow(), two = slow();
  wait_lease_out(); // a copy just opened starts no round for a lease's time
  (*me)->send(copies[0], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[0], std::vector<node_id>{nodes[1], nodes[2]},
              std::vector<caf::actor>{one, two}, w, false, ring_epoch);
  BOOST_REQUIRE(status(0).first == "promoting"); // its round is out
  (*me)->send(copies[0], r_config_atom::value, static_cast<std::uint8_t>(copy_role::replica),
              node_id{}, std::vector<node_id>{}, std::vector<caf::actor>{}, w, false,
              ring_epoch);
  std::this_thread::sleep_for(600ms); // both answers are in (a fixed delay by design)
  BOOST_TEST(status(0).first == "replica");
  for (const auto& a : {one, two})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

// A handoff's fence counts the copies of removed nodes as fenced (they
// take part in nothing): a primary whose other copies are on nodes the
// operator removed closes for the handoff at once instead of trying for
// 2 s (handoff_fence_wait): the drain is answered within 1 s.
BOOST_FIXTURE_TEST_CASE(a_handoffs_fence_counts_the_copies_of_removed_nodes, sets_of_three) {
  const std::vector<std::size_t> old_set{0, 1, 2};
  lead_set(0, old_set);
  BOOST_REQUIRE(acknowledged(0, 1));
  for (std::size_t i : {1, 2})
    caf::anon_send_exit(copies[i], caf::exit_reason::kill);
  (*me)->send(copies[0], r_others_atom::value, std::vector<node_id>{nodes[1], nodes[2]},
              std::vector<node_id>{}, std::vector<caf::actor>{});
  bool drained = false;
  (*me)->request(copies[0], 1s, drain_atom::value, std::uint64_t{10000}, std::uint64_t{2})
    .receive([&](drained_atom, std::uint32_t) { drained = true; }, [](caf::error&) {});
  BOOST_TEST(drained, "the drain waited for copies on removed nodes");
}

// Raft's consistency check (Sec. 5.3): a batch is taken only when the
// record before it is the one the primary names, by transaction and by
// term (docs/REPLICATION.md, "Terms in the journal"). The test sends copy
// 1 an empty batch at its end as copy 0 would, naming the record before it
// (the commit of <77,1>) with its real term, then with another.
BOOST_AUTO_TEST_CASE(a_batch_whose_previous_record_has_another_term_is_refused) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 3)); // tx <77,1>: its commit is the last record
  const auto end = status(0).second;
  BOOST_REQUIRE(wait_end(1, end));
  const copy_term t0{term_of(0), nodes[0]};
  auto send = [&](const copy_term& prev_term) {
    std::uint8_t out = 255;
    // Answered with r_acked, to the sender, naming the batch's number.
    const std::uint64_t flight = 1000 + prev_term.n;
    (*me)->send(copies[1], r_append_atom::value, nodes[0], flight, true,
                encode_batch(replication_batch{end, {}, std::nullopt}), std::uint64_t{77},
                std::uint64_t{1}, prev_term.n, prev_term.by, t0.n, t0.by, ring_epoch);
    (*me)->receive(
      [&](r_acked_atom, std::uint64_t f, std::uint64_t, std::uint8_t status,
          std::uint64_t, node_id&) {
        BOOST_TEST(f == flight);
        out = status;
      },
      caf::after(std::chrono::seconds(5)) >> [] {});
    return out;
  };
  BOOST_TEST(send(t0) == static_cast<std::uint8_t>(repl_status::applied));
  BOOST_TEST(send(copy_term{t0.n + 1, t0.by}) == static_cast<std::uint8_t>(repl_status::diverged));
}

// With w = 2 of 3 copies, one replica syncs each batch at once and the
// other takes it without a sync (docs/REPLICATION.md, "Acknowledgement and
// visibility": w durable copies answer a write, not three). When the one
// that syncs at once is silent, a write waits lazy_grace (100 ms) and the
// primary asks the other to sync (r_sync). Here copy 1 is the lazy one
// (no tick, which would sync it too; its syncs on sync threads: without
// r_sync the write is never on 2 copies) and the eager one, by the rotation
// of partition_replication::eager (the second live peer for partition 3),
// is a stand-in that drops everything.
BOOST_AUTO_TEST_CASE(a_write_whose_eager_copy_is_silent_asks_the_lazy_one_to_sync) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  ticks[1] = 0ms; // no tick: nothing but the primary's r_sync syncs its lazy batches
  syncers[1] = std::make_shared<background_syncer>(1);
  restart(1);
  configure(1, copy_role::replica, 0);
  auto silent = spawn_silent();
  (*me)->send(copies[0], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
              nodes[0], std::vector<node_id>{nodes[1], nodes[2]},
              std::vector<caf::actor>{copies[1], silent}, w, false, ring_epoch);
  BOOST_REQUIRE(wait_role(0, "primary"));
  const auto t0 = std::chrono::steady_clock::now();
  BOOST_TEST(acknowledged(0, 2)); // on copies 0 and 1 (3 s at most)
  const auto took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
  BOOST_TEST(took_ms >= 100, "copy 1 synced the batch at once: it was not the lazy copy");
  BOOST_TEST(took_ms < 3000);
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
}

// A participant's answer to recovery's question "what became of this
// transaction?" (p_find) counts a commit only once it cannot be taken
// back: applied and on w copies (find_answer; docs/RELIABILITY.md, "The
// participant fence"). A commit durable at the primary alone is "ask
// again"; a failover could drop it, and recovery would have committed the
// other participants on it. Here <88,1> is prepared on the three copies,
// then copy 0's batches go to stand-ins that drop them, so its commit
// stays on one copy; once its real copies are back it is on 3 and the
// answer is the commit.
BOOST_AUTO_TEST_CASE(a_find_answers_ask_again_for_a_commit_not_yet_on_w_copies) {
  start_with_copy_0_leading();
  const tx_id tx{88, 1};
  auto prepared = write(0, tx, 7, true);
  BOOST_REQUIRE(prepared);
  BOOST_REQUIRE(!prepared->err);
  auto silent = spawn_silent();
  auto lead_with = [&](std::vector<caf::actor> handles) {
    (*me)->send(copies[0], r_config_atom::value, static_cast<std::uint8_t>(copy_role::primary),
                nodes[0], std::vector<node_id>{nodes[1], nodes[2]}, std::move(handles), w, false, ring_epoch);
  };
  lead_with({silent, silent});
  BOOST_REQUIRE(wait_role(0, "primary"));
  // Held for w copies, then "outcome unknown": durable and applied here.
  BOOST_REQUIRE(!commit(0, tx, prepared->time + 1));
  auto find = [&] { return ask(0, part_find_atom::value, tx); };
  auto early = find();
  BOOST_REQUIRE(early);
  BOOST_TEST(early->commit_time == 0u, "a commit on one copy of three was reported");
  BOOST_REQUIRE(early->err.has_value());
  BOOST_TEST(early->err->code() == errc::unavailable);
  BOOST_TEST(early->err->message().find("ask again") != std::string::npos);
  lead_with({copies[1], copies[2]});
  std::optional<part_find_resp> later;
  for (int n = 0; n < 250 && !(later && later->commit_time != 0); ++n) { // 5 s
    std::this_thread::sleep_for(20ms);
    later = find();
  }
  BOOST_REQUIRE(later);
  BOOST_TEST(!later->err.has_value());
  BOOST_TEST(later->commit_time != 0u);
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
}

// Read leases (docs/REPLICATION.md, "Read leases"): a primary that never
// sees its links drop, while its copies were told it is down and another
// copy took over, must not go on answering reads from its own state. The
// copies granted it a lease with every batch they took and promise no
// other copy's round until it runs out; it serves reads only while w - 1
// copies' grants (counted from when it sent) last, and renews them only
// with copies that still follow it. Before, copy 0 answered 1 here long
// after +10 had been acknowledged by copies 1 and 2 (it learnt of the new
// primary only at its next write).
BOOST_AUTO_TEST_CASE(a_primary_cut_off_without_knowing_it_stops_serving_reads_before_another_leads) {
  start_with_copy_0_leading();
  // Copy 2 grants copy 0 a lease when it takes the write's batch (after
  // `wrote`), so copy 1 cannot lead before `wrote` + read_lease.
  const auto wrote = std::chrono::steady_clock::now();
  BOOST_REQUIRE(acknowledged(0, 1));
  BOOST_REQUIRE(read(0).value_or(-1) == 1);
  // Copies 1 and 2 are told copy 0 is down; copy 0 is told nothing.
  const auto cut = std::chrono::steady_clock::now();
  configure(2, copy_role::replica, 1, {false, true, true});
  configure(1, copy_role::primary, 1, {false, true, true});
  BOOST_REQUIRE(wait_role(1, "primary"));
  const auto took_over = std::chrono::steady_clock::now();
  BOOST_REQUIRE(acknowledged(1, 10)); // on copies 1 and 2
  BOOST_TEST_MESSAGE("copy 1 led "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(took_over - cut)
                          .count()
                     << " ms after the cut");
  BOOST_TEST((took_over - wrote >= partition_replication::read_lease),
             "copy 1 led before copy 2's grant to copy 0 could have run out");
  // Copy 0 never serves the value without the acknowledged write (it
  // refuses, or, once it has asked its copies, steps down).
  for (int n = 0; n < 10; ++n) {
    auto v = read(0);
    BOOST_TEST((!v || *v == 11),
               "copy 0 served " << v.value_or(-1) << " after 11 was acknowledged");
  }
  // Its membership learns of copy 1 at last.
  configure(0, copy_role::replica, 1);
  configure(2, copy_role::replica, 1);
  configure(1, copy_role::primary, 1);
  BOOST_TEST(read_once_served(1).value_or(-1) == 11);
}

// A copy its node no longer needs (actors/copy_retirement.hpp): retired,
// it takes no more batches and promises no take-over round, so it counts
// in no quorum of its old copy set; the primary tells whether its journal
// holds the retired copy's last record (the test the membership makes
// before it deletes the copy): yes while the copy is a prefix of it, no
// for another transaction or term at that LSN, or past the primary's end.
BOOST_AUTO_TEST_CASE(a_retired_copy_takes_no_batch_promises_no_round_and_is_checked_against_the_primary) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  BOOST_REQUIRE(wait_end(2, status(0).second));
  retire(2);
  BOOST_REQUIRE(wait_role(2, "replica"));
  const auto t = tail_of(2);
  BOOST_REQUIRE(t.end > 1);
  BOOST_TEST(holds(0, t.end - 1, t.o, t.q, t.term) == 1);

  // Writes go on with copies 0 and 1 (w = 2); copy 2 takes none of them.
  BOOST_REQUIRE(acknowledged(0, 10));
  BOOST_REQUIRE(acknowledged(0, 100));
  BOOST_REQUIRE(wait_end(1, status(0).second));
  BOOST_TEST(status(2).second == t.end);
  BOOST_TEST(status(0).second > t.end);
  // Still a prefix of the primary's journal.
  BOOST_TEST(holds(0, t.end - 1, t.o, t.q, t.term) == 1);
  // Another transaction or another term at that LSN is not held; nor is a
  // record past the primary's end.
  BOOST_TEST(holds(0, t.end - 1, t.o, t.q + 1000, t.term) == 0);
  BOOST_TEST(holds(0, t.end - 1, t.o, t.q, copy_term{t.term.n + 1, t.term.by}) == 0);
  BOOST_TEST(holds(0, status(0).second, t.o, t.q, t.term) == 0);

  // Copy 1 (its old peer) tries to take over: the retired copy promises
  // nothing, and copy 0 keeps the promise of its own term.
  auto [promised, held] = fence(2, copy_term{wall_clock_us() + 1000000, nodes[1]});
  BOOST_TEST(!promised);
  BOOST_TEST(read(0).value_or(-1) == 111);
}

// A replica passes a request on to its primary (divert). If that primary
// is on a node that is killed, the message is lost without a word; the
// replica used to answer only when the request's bound ran out (the
// node's request timeout, 10 s). In a CI run of stop 31 this held a
// two-phase commit's prepare, and the client's retries with the same op
// ids waited behind its other prepares: a write through a survivor failed
// for 3 s. Now the replica answers such requests as soon as it no longer
// follows that primary (its membership reconfigures it when the node is
// seen down). Here copy 1 follows a stand-in for copy 0 that answers
// nothing; a two-phase prepare sent to it gets no answer; once copy 1 is
// told to follow the real copy 0, the prepare is answered at once,
// "outcome unknown: retry with the same op ids", and the retry commits.
BOOST_FIXTURE_TEST_CASE(a_request_passed_on_to_a_primary_no_longer_followed_is_answered_at_once,
                        three_copies) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  // Not spawn_silent(): a dropped request is answered with an error by CAF;
  // a killed node's actor answers nothing. Skipped messages stay unread.
  auto silent = spawn_self_only(*sys, [](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::skip);
    return {[](caf::exit_msg&) {}};
  });
  auto follow = [&](const caf::actor& primary) {
    (*me)->send(copies[1], r_config_atom::value, static_cast<std::uint8_t>(copy_role::replica),
                nodes[0], std::vector<node_id>{nodes[0], nodes[2]},
                std::vector<caf::actor>{primary, copies[2]}, w, false, ring_epoch);
  };
  follow(silent);
  BOOST_REQUIRE(wait_role(1, "replica"));
  part_prepare_req req;
  req.tx = tx_id{77, next_tx++};
  req.updates = {tx_update{the_key, crdt_type::counter, counter_effect{5}, std::nullopt}};
  req.two_phase = true;
  caf::scoped_actor client{*sys};
  client->send(copies[1], part_prepare_atom::value, encode_wire(req));
  auto answer = [&](std::chrono::milliseconds limit) {
    std::optional<part_time_resp> got;
    client->receive(
      [&](std::string& bytes) {
        if (auto r = decode_wire<part_time_resp>(bytes))
          got = std::move(*r);
      },
      caf::after(limit) >> [] {});
    return got;
  };
  {
    auto early = answer(200ms); // passed on to the stand-in, which drops it
    BOOST_TEST(!early.has_value(),
               "answered before: " << (early && early->err ? early->err->to_string() : "ok"));
  }
  const auto told = std::chrono::steady_clock::now();
  follow(copies[0]);
  auto got = answer(500ms); // the bound of a pass-on here is 2 s
  const auto ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - told)
      .count();
  BOOST_REQUIRE_MESSAGE(got.has_value(), "no answer within 500 ms of the reconfiguration");
  BOOST_TEST_MESSAGE("answered " << ms << " ms after the reconfiguration: "
                                 << (got->err ? got->err->to_string() : "ok"));
  BOOST_REQUIRE(got->err.has_value());
  BOOST_TEST(got->err->code() == errc::unavailable);
  BOOST_TEST(got->err->message().find("retry with the same op ids") != std::string::npos);
  // Passed on to the real primary now: the retry is served.
  BOOST_TEST(acknowledged(1, 6));
  BOOST_TEST(read_once_served(0).value_or(-1) == 7);
  caf::anon_send_exit(silent, caf::exit_reason::user_shutdown);
}

// What the node logs say when two nodes' copy plans name different
// primaries for a while (docs/RELIABILITY.md, "An open finding of stop
// 31"): a copy that has refused one node's batches for 3 s says whom it
// follows and whose batches it refuses. Copy 1 is told to follow copy 2
// while copy 0 leads on (w = 2: copy 2 acknowledges) and resends to copy 1
// every 50 ms. The log (stderr, one write a line) is read from a file.
BOOST_FIXTURE_TEST_CASE(a_copy_that_keeps_refusing_a_primarys_batches_says_so, three_copies) {
  start_with_copy_0_leading();
  BOOST_REQUIRE(acknowledged(0, 1));
  const auto file = (root / "stderr.log").string();
  std::filesystem::create_directories(root);
  const int saved = ::dup(STDERR_FILENO);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  BOOST_REQUIRE(saved >= 0 && fd >= 0);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  configure(1, copy_role::replica, 2);
  const bool wrote = acknowledged(0, 2); // on copies 0 and 2; copy 1 refuses it
  std::this_thread::sleep_for(3500ms);   // the warning's bound (a fixed time)
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  BOOST_REQUIRE(wrote);
  std::ifstream in{file};
  std::stringstream text;
  text << in.rdbuf();
  const std::string expected = "partition " + std::to_string(partition_index)
                               + ": this copy (replica, following " + nodes[2]
                               + ") has refused the batches of " + nodes[0];
  BOOST_TEST(text.str().find(expected) != std::string::npos, "log:\n" << text.str());
  BOOST_TEST(text.str().find("copy plans name different primaries") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
