// The client gateway (interactive transactions, static requests, two-phase
// commit) and the partition actors under CAF's deterministic test scheduler
// (CAF-NOTES.md, "Tests"): partitions are spawned on the scheduler (not
// detached) so run() steps every actor; the test hands a request to the
// gateway, runs the scheduler dry, then checks the reply. No sleeps.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <caf/all.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/client_gateway.hpp"
#include "actors/node_context.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "protocol/descriptor.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

caf::actor_system_config& test_config(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("testing"));
  return cfg;
}

struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{test_config(cfg)};
  caf::scheduler::test_coordinator& sched =
    dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  caf::scoped_actor self{sys};
  std::filesystem::path dir;
  std::shared_ptr<node_context> ctx = std::make_shared<node_context>();
  std::vector<caf::actor> partitions;
  client_gateway_parts gateway;

  fixture() {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path()
          / ("tally-coord-" + std::to_string(rd()));
    ctx->q = 4;
    ctx->owner = "tally@test";
    ctx->incarnation = 42;
    ctx->board = std::make_shared<safe_board>(ctx->q);
    for (std::uint32_t i = 0; i < ctx->q; ++i) {
      partition_options o;
      o.index = i;
      o.path = (dir / std::to_string(i)).string();
      o.mode = durability::none;
      auto core = partition_core::open(o);
      BOOST_REQUIRE(core);
      partitions.push_back(spawn_partition(
        sys, std::move(*core), partition_placement::scheduler(), board_slot(ctx->board, i)));
    }
    ctx->routes->store(local_routes(partitions, ctx->owner));
    gateway = make_client_gateway(sys, ctx);
  }
  ~fixture() {
    for (auto& p : partitions)
      caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(gateway.sweeper, caf::exit_reason::user_shutdown);
    sched.run();
    std::filesystem::remove_all(dir);
  }

  // The client server's path: the gateway, then every actor it reached.
  response ask_gateway(request req) {
    std::optional<response> out;
    gateway.handler->handle(1, std::move(req), [&](response r) { out = std::move(r); });
    sched.run();
    BOOST_REQUIRE_MESSAGE(out, "no reply after the scheduler ran dry");
    return *out;
  }
};

bound_object counter(const std::string& k) {
  return {object_key{"b", k}, crdt_type::counter};
}
update_op inc(const std::string& k, std::int64_t d,
              std::optional<op_id> id = {}) {
  return {counter(k), counter_op{counter_update{d}, id}};
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(gateway_tests, fixture)

BOOST_AUTO_TEST_CASE(static_commit_over_several_partitions_is_read_atomically) {
  static_update_objects_req up;
  for (int i = 0; i < 16; ++i)
    up.updates.push_back(inc("k" + std::to_string(i), i));
  auto r = ask_gateway(up);
  auto* c = std::get_if<commit_resp>(&r);
  BOOST_REQUIRE(c && c->success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c->commit_time;
  for (int i = 0; i < 16; ++i)
    rd.objects.push_back(counter("k" + std::to_string(i)));
  auto rr = ask_gateway(rd);
  auto* s = std::get_if<static_read_objects_resp>(&rr);
  BOOST_REQUIRE(s && s->objects.success);
  for (int i = 0; i < 16; ++i)
    BOOST_TEST(std::get<std::int64_t>(s->objects.values[std::size_t(i)]) == i);
  BOOST_TEST(ctx->board->blocked_from[0].load() == UINT64_MAX); // nothing held
}

BOOST_AUTO_TEST_CASE(interactive_transaction_buffers_until_commit) {
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  BOOST_REQUIRE(st.success);
  auto d = decode_tx_descriptor(st.transaction_descriptor);
  BOOST_REQUIRE(d);
  BOOST_TEST(d->owner_incarnation == 42u);
  auto u = ask_gateway(update_objects_req{{inc("x", 5), inc("y", 1)},
                                                   st.transaction_descriptor});
  BOOST_TEST(std::get<operation_resp>(u).success);
  auto r = ask_gateway(read_objects_req{{counter("x")}, st.transaction_descriptor});
  BOOST_TEST(std::get<std::int64_t>(std::get<read_objects_resp>(r).values[0]) == 5);
  static_read_objects_req outside;
  outside.objects = {counter("x")};
  auto o = std::get<static_read_objects_resp>(ask_gateway(outside));
  BOOST_TEST(std::get<std::int64_t>(o.objects.values[0]) == 0);
  auto c = std::get<commit_resp>(ask_gateway(
                                     commit_transaction_req{st.transaction_descriptor}));
  BOOST_REQUIRE(c.success);
  outside.transaction.timestamp = c.commit_time;
  auto o2 = std::get<static_read_objects_resp>(ask_gateway(outside));
  BOOST_TEST(std::get<std::int64_t>(o2.objects.values[0]) == 5);
}

// Closing a connection aborts its open transactions; the sweeper aborts idle
// ones. Both erased the transaction from the table while holding its mutex,
// which freed the mutex before it was unlocked (a heap-use-after-free found by
// ThreadSanitizer, docs/RELIABILITY.md "TSan"; the sanitizer builds of this
// suite, ASan's and TSan's, fail on it).
BOOST_AUTO_TEST_CASE(a_closed_connections_transaction_is_aborted) {
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  BOOST_REQUIRE(st.success);
  BOOST_TEST(gateway.handler->holds_state(1));
  gateway.handler->closed(1); // ask_gateway's session
  BOOST_TEST(!gateway.handler->holds_state(1));
  auto c = ask_gateway(commit_transaction_req{st.transaction_descriptor});
  BOOST_TEST(std::holds_alternative<error_resp>(c));
}

BOOST_AUTO_TEST_CASE(an_idle_transaction_is_aborted_by_the_sweeper) {
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  BOOST_REQUIRE(st.success);
  ctx->limits.tx_idle_timeout = std::chrono::milliseconds{0};
  BOOST_TEST(gateway.handler->holds_state(1));
  // The sweeper's next round is its 250 ms delayed message: fire it now.
  BOOST_REQUIRE(sched.trigger_timeout());
  sched.run();
  BOOST_TEST(!gateway.handler->holds_state(1));
  auto c = ask_gateway(commit_transaction_req{st.transaction_descriptor});
  BOOST_TEST(std::holds_alternative<error_resp>(c));
}

BOOST_AUTO_TEST_CASE(stale_descriptor_and_unsupported_type_get_error_responses) {
  tx_descriptor d;
  d.tx = {7, 1};
  d.owner = "tally@test";
  d.owner_incarnation = 7; // an earlier incarnation
  auto r = ask_gateway(commit_transaction_req{encode_tx_descriptor(d)});
  BOOST_TEST(std::holds_alternative<error_resp>(r));
  static_update_objects_req reset_fat; // AntidoteDB has it, Tally not yet
  reset_fat.updates = {update_op{bound_object{object_key{"b", "f"}, crdt_type::fatcounter},
                                 unsupported_op{op_kind::reset}}};
  BOOST_TEST(std::holds_alternative<error_resp>(ask_gateway(reset_fat)));
}

// A descriptor names its transaction by its sequence number (which counts
// up) and 64 random secret bits: another client's transaction cannot be
// reached by counting from one's own, nor by a descriptor without a secret
// (version 1's layout).
BOOST_AUTO_TEST_CASE(a_neighbouring_descriptor_names_no_transaction) {
  auto mine = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  auto theirs = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  auto d = decode_tx_descriptor(mine.transaction_descriptor);
  auto t = decode_tx_descriptor(theirs.transaction_descriptor);
  BOOST_REQUIRE(d && t);
  BOOST_TEST(t->tx.seq == d->tx.seq + 1);
  BOOST_TEST(d->secret != 0u);
  BOOST_TEST(d->secret != t->secret);
  for (std::uint64_t step : {1u, 2u}) {
    auto forged = *d;
    forged.tx.seq += step; // step 1: theirs, with my secret
    auto r = ask_gateway(update_objects_req{{inc("victim", 1000000)},
                                            encode_tx_descriptor(forged)});
    BOOST_TEST(std::holds_alternative<error_resp>(r));
  }
  auto no_secret = *t;
  no_secret.secret = 0;
  auto r = ask_gateway(update_objects_req{{inc("victim", 1000000)},
                                          encode_tx_descriptor(no_secret)});
  BOOST_TEST(std::get<error_resp>(r).err.message().find("unknown transaction")
             != std::string::npos);
  auto c = ask_gateway(commit_transaction_req{theirs.transaction_descriptor});
  BOOST_TEST(std::get<commit_resp>(c).success);
}

BOOST_AUTO_TEST_CASE(single_and_multi_partition_static_requests_agree) {
  static_update_objects_req up;
  up.updates = {inc("solo", 3)};
  auto c = std::get<commit_resp>(ask_gateway(up));
  BOOST_REQUIRE(c.success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c.commit_time;
  rd.objects = {counter("solo")};
  auto s = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST(std::get<std::int64_t>(s.objects.values[0]) == 3);
  // Several partitions go through a coordinator, with the same answers.
  static_update_objects_req multi;
  for (int i = 0; i < 8; ++i)
    multi.updates.push_back(inc("m" + std::to_string(i), i));
  auto mc = std::get<commit_resp>(ask_gateway(multi));
  BOOST_REQUIRE(mc.success);
  static_read_objects_req all;
  all.transaction.timestamp = mc.commit_time;
  for (int i = 0; i < 8; ++i)
    all.objects.push_back(counter("m" + std::to_string(i)));
  auto ms = std::get<static_read_objects_resp>(ask_gateway(all));
  for (int i = 0; i < 8; ++i)
    BOOST_TEST(std::get<std::int64_t>(ms.objects.values[std::size_t(i)]) == i);
}

BOOST_AUTO_TEST_CASE(duplicate_op_id_across_two_partitions_is_applied_once) {
  op_id id{1234, 1};
  static_update_objects_req up;
  up.updates = {inc("a", 1, id), inc("zz", 1, op_id{1234, 2})};
  auto c1 = std::get<commit_resp>(ask_gateway(up));
  auto c2 = std::get<commit_resp>(ask_gateway(up)); // the retry
  BOOST_REQUIRE(c1.success && c2.success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c2.commit_time;
  rd.objects = {counter("a"), counter("zz")};
  auto s = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST(std::get<std::int64_t>(s.objects.values[0]) == 1);
  BOOST_TEST(std::get<std::int64_t>(s.objects.values[1]) == 1);
}

// The partition's timer (docs/NODE.md, "Timers"): with no request at all,
// ticks advance the FBFs and run checkpoints; an exit is not held up by the
// pending tick. The core's clocks are the test's; the test scheduler's
// clock fires the ticks.
BOOST_AUTO_TEST_CASE(partition_timer_advances_fbfs_and_checkpoints_without_requests) {
  std::uint64_t now = 1'000'000;
  std::int64_t fbf_ms = 0;
  partition_options o;
  o.index = 8; // its ticks come 8/64 of a period late; it checkpoints at even ticks
  o.path = (dir / "timers").string();
  o.mode = durability::none;
  o.snapshot_retention_us = 100'000;
  o.now_us = [&] { return now; };
  o.now_fbf = [&] { return fbf_time{fbf_duration{fbf_ms}}; };
  auto opened = partition_core::open(o);
  BOOST_REQUIRE(opened);
  auto core = std::move(*opened);
  auto p = core->stage_prepare({1, 1}, {tx_update{object_key{"b", "x"},
                                                  crdt_type::counter,
                                                  counter_effect{1},
                                                  op_id{3, 1}}},
                               0, false);
  BOOST_REQUIRE(p);
  BOOST_REQUIRE(core->stage_commit({1, 1}, p->prepare_time));
  BOOST_REQUIRE(core->flush());
  partition_core* raw = core.get(); // the test scheduler runs on this thread
  partition_timers timers;
  timers.fbf_tick = 100ms;
  timers.checkpoint_interval = 200ms;
  BOOST_TEST(timers.tick().count() == 100);
  BOOST_TEST(timers.checkpoint_every() == 2u);
  BOOST_TEST(timers.first_tick(8).count() == 112);
  BOOST_TEST(!timers.checkpoint_due(1, 8));
  BOOST_TEST(timers.checkpoint_due(2, 8));
  auto part = spawn_partition(sys, std::move(core), partition_placement::scheduler(), nullptr, timers);
  self->monitor(part);
  sched.run();
  BOOST_REQUIRE(raw->fbf("b"));
  BOOST_TEST(raw->fbf("b")->clock().time_since_epoch().count() == 0);
  now += 1'000'000;
  fbf_ms += 2500; // past the first refresh (t = 2 s)
  sched.advance_time(100ms); // not yet: the partition's phase
  sched.run();
  BOOST_TEST(raw->fbf("b")->clock().time_since_epoch().count() == 0);
  sched.advance_time(12ms); // tick 1: the FBF moves
  sched.run();
  BOOST_TEST(raw->fbf("b")->clock().time_since_epoch().count() == 2500);
  BOOST_TEST(raw->fbf("b")->refresh_count() > 0u);
  BOOST_TEST(raw->checkpoint_time() == 0u);
  sched.advance_time(100ms); // tick 2: a checkpoint too
  sched.run();
  BOOST_TEST(raw->checkpoint_time() == now - 100'000);
  caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
  sched.run();
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(0s) >> [] {});
  BOOST_TEST(down); // quit with a tick still pending
}

// The partitions of a node do not tick, nor checkpoint, all at once
// (docs/PERFORMANCE.md, "Latency at half load": 64 checkpoints in one
// wake-up held a shard thread 50-400 ms every 10 s): the tallyd defaults
// (1 s ticks, a checkpoint every 10 s), 64 partitions. Each checkpoints
// once every 10 ticks, at most 7 of them at any one tick; their first
// ticks fall at 64 different moments of the first period after the first.
BOOST_AUTO_TEST_CASE(the_partitions_of_a_node_spread_their_ticks_and_checkpoints) {
  partition_timers timers;
  timers.fbf_tick = 1000ms;
  timers.checkpoint_interval = 10000ms;
  BOOST_REQUIRE(timers.checkpoint_every() == 10u);
  std::map<std::uint64_t, int> at_tick;
  std::set<std::int64_t> first;
  for (std::uint32_t p = 0; p < 64; ++p) {
    int mine = 0;
    for (std::uint64_t t = 1; t <= 100; ++t)
      if (timers.checkpoint_due(t, p)) {
        ++mine;
        ++at_tick[t];
      }
    BOOST_TEST(mine == 10); // once per 10 ticks
    auto f = timers.first_tick(p).count();
    BOOST_TEST(f >= 1000);
    BOOST_TEST(f < 2000);
    first.insert(f);
  }
  for (const auto& [t, n] : at_tick)
    BOOST_TEST(n <= 7, "tick " << t << ": " << n << " checkpoints");
  BOOST_TEST(first.size() == 64u);
}

// Reads waiting for a snapshot the partition has not reached are bounded
// in count (issue 17: 120,000 reads at a future clock took 364 MB): one
// over the limit is refused at once; the parked ones still answer.
BOOST_AUTO_TEST_CASE(parked_reads_are_bounded_in_count) {
  partition_options o;
  o.index = 7;
  o.path = (dir / "parked").string();
  o.mode = durability::none;
  auto core = partition_core::open(o);
  BOOST_REQUIRE(core);
  partition_timers timers;
  timers.max_parked_reads = 2;
  auto part = spawn_partition(sys, std::move(*core), partition_placement::scheduler(), nullptr, timers);
  std::vector<std::optional<part_read_resp>> got(3);
  for (std::size_t i = 0; i < 3; ++i) {
    part_read_call call;
    call.req.snapshot = vector_clock{{local_dc, wall_clock_us() + 3'600'000'000ull}};
    call.req.items = {read_item{object_key{"b", "far"}, crdt_type::counter, {}}};
    call.reply = [&got, i](part_read_resp r) { got[i] = std::move(r); };
    caf::anon_send(part, part_read_atom::value, std::move(call));
  }
  sched.run();
  BOOST_TEST(!got[0].has_value()); // parked: the snapshot is an hour ahead
  BOOST_TEST(!got[1].has_value());
  BOOST_REQUIRE(got[2].has_value());
  BOOST_REQUIRE(got[2]->err.has_value());
  BOOST_TEST(got[2]->err->message().find("reads waiting") != std::string::npos);
  caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
  sched.run();
  BOOST_TEST(got[0].has_value()); // answered at shutdown ("node shutting down")
}

// ---- every type (docs/DATATYPES.md): read before write at the gateway ----

namespace {

update_op typed(const std::string& k, crdt_type t, crdt_update u) {
  return {bound_object{object_key{"b", k}, t}, crdt_op{std::move(u)}};
}

using strings = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_CASE(static_set_register_and_flag_updates_are_read_back) {
  static_update_objects_req up;
  for (int i = 0; i < 8; ++i) // several partitions: a two-phase commit
    up.updates.push_back(typed("s" + std::to_string(i), crdt_type::orset,
                               set_update{set_add{{"a", "b"}}}));
  up.updates.push_back(typed("s0", crdt_type::orset, set_update{set_remove{{"a"}}}));
  up.updates.push_back(typed("r", crdt_type::mvreg,
                             register_update{register_assign{"v", std::nullopt}}));
  up.updates.push_back(typed("f", crdt_type::flag_dw, flag_update::enable));
  up.updates.push_back(inc("c", 3));
  auto c = std::get<commit_resp>(ask_gateway(up));
  BOOST_REQUIRE(c.success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c.commit_time;
  rd.objects = {{object_key{"b", "s0"}, crdt_type::orset},
                {object_key{"b", "s7"}, crdt_type::orset},
                {object_key{"b", "r"}, crdt_type::mvreg},
                {object_key{"b", "f"}, crdt_type::flag_dw},
                counter("c")};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_REQUIRE(r.objects.success);
  BOOST_TEST((r.objects.values == std::vector<crdt_value>{
                crdt_value{strings{"b"}}, crdt_value{strings{"a", "b"}},
                crdt_value{strings{"v"}}, crdt_value{true}, crdt_value{std::int64_t{3}}}));
  BOOST_TEST((r.objects.types.at(2) == crdt_type::mvreg)); // sent as an mvreg
}

BOOST_AUTO_TEST_CASE(wrong_type_update_is_refused_and_nothing_is_stored) {
  BOOST_REQUIRE(std::get<commit_resp>(ask_gateway(static_update_objects_req{
                                        {}, {inc("x", 1)}})).success);
  auto e = ask_gateway(static_update_objects_req{
    {}, {typed("fresh", crdt_type::orset, set_update{set_add{{"a"}}}),
         typed("x", crdt_type::orset, set_update{set_add{{"a"}}})}});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(e));
  BOOST_TEST(std::get<error_resp>(e).err.code() == errc::wrong_type);
  static_read_objects_req rd;
  rd.objects = {{object_key{"b", "fresh"}, crdt_type::orset}, counter("x")};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((r.objects.values == std::vector<crdt_value>{crdt_value{strings{}},
                                                          crdt_value{std::int64_t{1}}}));
}

BOOST_AUTO_TEST_CASE(pipelined_interactive_updates_are_prepared_in_order_and_read_back) {
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  const auto& d = st.transaction_descriptor;
  // Sent back to back without waiting, as antidote_ts_client does: each
  // update is prepared after the one before, the read and the commit wait.
  std::vector<std::optional<response>> replies(5);
  auto send = [&](std::size_t i, request req) {
    gateway.handler->handle(1, std::move(req), [&replies, i](response r) { replies[i] = std::move(r); });
  };
  send(0, update_objects_req{{typed("s", crdt_type::rwset, set_update{set_add{{"a", "b"}}})}, d});
  send(1, update_objects_req{{typed("s", crdt_type::rwset, set_update{set_remove{{"a"}}})}, d});
  send(2, update_objects_req{{typed("l", crdt_type::lwwreg,
                                    register_update{register_assign{"one", std::nullopt}}),
                              typed("l", crdt_type::lwwreg,
                                    register_update{register_assign{"two", std::nullopt}})}, d});
  send(3, read_objects_req{{{object_key{"b", "s"}, crdt_type::rwset},
                            {object_key{"b", "l"}, crdt_type::lwwreg}}, d});
  send(4, commit_transaction_req{d});
  sched.run();
  for (std::size_t i = 0; i < 3; ++i)
    BOOST_TEST(std::get<operation_resp>(*replies[i]).success);
  auto own = std::get<read_objects_resp>(*replies[3]);
  BOOST_TEST((own.values == std::vector<crdt_value>{crdt_value{strings{"b"}},
                                                    crdt_value{std::string{"two"}}}));
  auto c = std::get<commit_resp>(*replies[4]);
  BOOST_REQUIRE(c.success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c.commit_time;
  rd.objects = {{object_key{"b", "s"}, crdt_type::rwset}, {object_key{"b", "l"}, crdt_type::lwwreg}};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((r.objects.values == own.values));
}

// A failed update aborts its transaction, as on AntidoteDB: the commit that
// follows fails with errc::aborted and stores nothing, also the updates that
// succeeded before it. Committed without the failed update, the transaction
// would store less than asked while its commit reported success (a client
// that pipelines the commit behind its update, or antidote_ts_client, which
// ignores an update's reply, would never learn of the loss).
BOOST_AUTO_TEST_CASE(a_failed_update_aborts_its_transaction) {
  BOOST_REQUIRE(std::get<commit_resp>(ask_gateway(static_update_objects_req{
                                        {}, {inc("x", 1)}})).success);
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  const auto& d = st.transaction_descriptor;
  BOOST_TEST(std::get<operation_resp>(ask_gateway(update_objects_req{{inc("y", 7)}, d}))
               .success);
  auto bad = ask_gateway(
    update_objects_req{{typed("x", crdt_type::orset, set_update{set_add{{"a"}}})}, d});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(bad));
  BOOST_TEST(std::get<error_resp>(bad).err.code() == errc::wrong_type);
  for (request later : {request{read_objects_req{{counter("y")}, d}},
                        request{update_objects_req{{inc("z", 1)}, d}},
                        request{commit_transaction_req{d}}}) {
    auto r = ask_gateway(later);
    BOOST_REQUIRE(std::holds_alternative<error_resp>(r));
    const auto& e = std::get<error_resp>(r).err;
    BOOST_TEST(e.code() == errc::aborted);
    BOOST_TEST(e.message().find("one of its updates failed") != std::string::npos,
               e.message());
  }
  // The commit ended it: the descriptor names no transaction any more.
  auto again = ask_gateway(commit_transaction_req{d});
  BOOST_TEST(std::get<error_resp>(again).err.message().find("unknown transaction")
             != std::string::npos);
  static_read_objects_req rd;
  rd.objects = {counter("x"), counter("y"), counter("z")};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((r.objects.values == std::vector<crdt_value>{crdt_value{std::int64_t{1}},
                                                          crdt_value{std::int64_t{0}},
                                                          crdt_value{std::int64_t{0}}}));
}

// The same with the update and the commit sent back to back (the client does
// not wait for the update's reply), and an update over --max-tx-updates as
// the failure.
BOOST_AUTO_TEST_CASE(a_commit_pipelined_behind_a_failed_update_is_refused) {
  ctx->limits.max_tx_updates = 2;
  auto st = std::get<start_transaction_resp>(ask_gateway(start_transaction_req{}));
  const auto& d = st.transaction_descriptor;
  std::vector<std::optional<response>> replies(3);
  auto send = [&](std::size_t i, request req) {
    gateway.handler->handle(1, std::move(req),
                            [&replies, i](response r) { replies[i] = std::move(r); });
  };
  send(0, update_objects_req{{inc("p", 1)}, d});
  send(1, update_objects_req{{inc("q", 1), inc("q", 1)}, d}); // 3 > 2
  send(2, commit_transaction_req{d});
  sched.run();
  BOOST_TEST(std::get<operation_resp>(*replies[0]).success);
  BOOST_TEST(std::get<error_resp>(*replies[1]).err.code() == errc::invalid_argument);
  BOOST_TEST(std::get<error_resp>(*replies[2]).err.code() == errc::aborted);
  static_read_objects_req rd;
  rd.objects = {counter("p"), counter("q")};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((r.objects.values == std::vector<crdt_value>{crdt_value{std::int64_t{0}},
                                                          crdt_value{std::int64_t{0}}}));
}

BOOST_AUTO_TEST_CASE(nested_map_updates_and_removes_are_read_as_maps) {
  map_update m;
  m.updates.push_back(keyed_update{map_key{"n", crdt_type::counter}, counter_update{4}});
  m.updates.push_back(keyed_update{map_key{"t", crdt_type::orset}, set_update{set_add{{"x"}}}});
  auto c = std::get<commit_resp>(ask_gateway(static_update_objects_req{
    {}, {typed("m", crdt_type::rrmap, m)}}));
  BOOST_REQUIRE(c.success);
  map_update rm;
  rm.removes.push_back(map_key{"t", crdt_type::orset});
  start_transaction_req after;
  after.timestamp = c.commit_time;
  auto c2 = std::get<commit_resp>(ask_gateway(static_update_objects_req{
    after, {typed("m", crdt_type::rrmap, rm)}}));
  BOOST_REQUIRE(c2.success);
  static_read_objects_req rd;
  rd.transaction.timestamp = c2.commit_time;
  rd.objects = {{object_key{"b", "m"}, crdt_type::rrmap}};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  map_value want;
  want.entries.push_back({map_key{"n", crdt_type::counter}, crdt_value{std::int64_t{4}}});
  BOOST_TEST((r.objects.values.at(0) == crdt_value{want}));
}

BOOST_AUTO_TEST_CASE(bcounter_decrements_within_rights_and_refuses_beyond_them) {
  auto bc = [](std::int64_t inc) {
    crdt_update u = inc >= 0 ? b_counter_update{b_counter_increment{static_cast<std::uint64_t>(inc), 0}}
                             : b_counter_update{b_counter_decrement{static_cast<std::uint64_t>(-inc), 0}};
    return typed("bc", crdt_type::bcounter, std::move(u));
  };
  auto c1 = std::get<commit_resp>(ask_gateway(static_update_objects_req{{}, {bc(5)}}));
  BOOST_REQUIRE(c1.success);
  start_transaction_req after;
  after.timestamp = c1.commit_time;
  auto c2 = std::get<commit_resp>(ask_gateway(static_update_objects_req{after, {bc(-3)}}));
  BOOST_REQUIRE(c2.success);
  after.timestamp = c2.commit_time;
  auto e = ask_gateway(static_update_objects_req{after, {bc(-3)}});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(e));
  BOOST_TEST(std::get<error_resp>(e).err.code() == errc::no_permissions);
  // Two interactive transactions on one snapshot spend the same 2 rights:
  // the partition refuses the second one's commit.
  auto t1 = std::get<start_transaction_resp>(ask_gateway(after));
  auto t2 = std::get<start_transaction_resp>(ask_gateway(after));
  BOOST_REQUIRE(std::get<operation_resp>(ask_gateway(update_objects_req{{bc(-2)}, t1.transaction_descriptor})).success);
  BOOST_REQUIRE(std::get<operation_resp>(ask_gateway(update_objects_req{{bc(-2)}, t2.transaction_descriptor})).success);
  auto k1 = std::get<commit_resp>(ask_gateway(commit_transaction_req{t1.transaction_descriptor}));
  BOOST_REQUIRE(k1.success);
  auto k2 = ask_gateway(commit_transaction_req{t2.transaction_descriptor});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(k2));
  BOOST_TEST(std::get<error_resp>(k2).err.code() == errc::no_permissions);
  static_read_objects_req rd;
  rd.transaction.timestamp = k1.commit_time;
  rd.objects = {{object_key{"b", "bc"}, crdt_type::bcounter}};
  auto r = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((r.objects.values.at(0) == crdt_value{std::int64_t{0}}));
}

BOOST_AUTO_TEST_CASE(a_resent_bcounter_decrement_with_its_op_id_is_applied_once) {
  auto op = [](std::int64_t inc, std::uint64_t seq) {
    crdt_update u = inc >= 0 ? b_counter_update{b_counter_increment{static_cast<std::uint64_t>(inc), 0}}
                             : b_counter_update{b_counter_decrement{static_cast<std::uint64_t>(-inc), 0}};
    return update_op{bound_object{object_key{"b", "once"}, crdt_type::bcounter},
                     crdt_op{std::move(u), op_id{77, seq}}};
  };
  BOOST_REQUIRE(std::get<commit_resp>(ask_gateway(static_update_objects_req{{}, {op(3, 1)}})).success);
  // The decrement spends every right; its resend (same op id, e.g. after a
  // lost reply) is dismissed, not refused for lack of rights nor applied.
  for (int i = 0; i < 2; ++i) {
    auto r = ask_gateway(static_update_objects_req{{}, {op(-3, 2)}});
    BOOST_REQUIRE_MESSAGE(std::holds_alternative<commit_resp>(r),
                          "attempt " << i << ": " << (std::holds_alternative<error_resp>(r)
                                                        ? std::get<error_resp>(r).err.to_string()
                                                        : std::string{}));
  }
  auto again = ask_gateway(static_update_objects_req{{}, {op(-1, 3)}});
  BOOST_REQUIRE(std::holds_alternative<error_resp>(again));
  BOOST_TEST(std::get<error_resp>(again).err.code() == errc::no_permissions);
  static_read_objects_req rd;
  rd.objects = {{object_key{"b", "once"}, crdt_type::bcounter}};
  auto v = std::get<static_read_objects_resp>(ask_gateway(rd));
  BOOST_TEST((v.objects.values.at(0) == crdt_value{std::int64_t{0}}));
}

BOOST_AUTO_TEST_SUITE_END()
