// The partition actor serves a read as soon as nothing undecided can change
// what it reads (issue 13): a transaction left prepared (its coordinator
// paused or dead) holds back only the keys it writes. Reads of other keys
// at later snapshots are answered at once; reads of its keys wait for its
// decision and are answered as soon as it is applied.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/node_context.hpp"
#include "actors/partition_actor.hpp"
#include "actors/partition_core.hpp"
#include "actors/spawn_helper.hpp"
#include "actors/wire.hpp"

using namespace tally;

namespace {

tx_update inc(const std::string& key, std::int64_t d) {
  return tx_update{object_key{"b", key}, crdt_type::counter, counter_effect{d}, std::nullopt};
}

// The value read through `who` at `snapshot`, nullopt when no answer came
// within `wait`.
std::optional<std::int64_t> read_within(caf::scoped_actor& me, const caf::actor& who,
                                        const std::string& key, std::uint64_t snapshot,
                                        std::chrono::milliseconds wait) {
  part_read_req r;
  r.snapshot = vector_clock{{local_dc, snapshot}};
  r.items = {read_item{object_key{"b", key}, crdt_type::counter, {}}};
  std::optional<std::int64_t> out;
  me->request(who, wait, part_read_atom::value, encode_wire(r))
    .receive(
      [&](std::string& bytes) {
        auto resp = decode_wire<part_read_resp>(bytes);
        if (resp && !resp->err && resp->values.size() == 1)
          out = std::get<std::int64_t>(resp->values[0]);
      },
      [&](caf::error&) {});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(partition_reads)

BOOST_AUTO_TEST_CASE(a_transaction_left_prepared_holds_back_only_its_own_keys) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("tally-reads-" + std::to_string(rd()));
  partition_options o;
  o.path = dir.string();
  o.mode = durability::none;
  auto core = partition_core::open(o);
  BOOST_REQUIRE(core);
  // y committed, then x prepared by a coordinator that went silent.
  auto y = (*core)->stage_prepare({1, 1}, {inc("y", 2)}, 0, false);
  BOOST_REQUIRE(y);
  BOOST_REQUIRE((*core)->stage_commit({1, 1}, y->prepare_time));
  auto x = (*core)->stage_prepare({1, 2}, {inc("x", 5)}, 0, true, {0, 1}, "tally@h:1");
  BOOST_REQUIRE(x);
  BOOST_REQUIRE((*core)->flush());
  {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    caf::actor_system sys{cfg};
    auto p = spawn_partition(sys, std::move(*core), partition_placement::detached());
    caf::scoped_actor me{sys};
    const auto later = wall_clock_us() + 1000;
    // Another key, above the prepare time: answered at once (before issue
    // 13 it waited for the transaction, here until the request timed out).
    auto got = read_within(me, p, "y", later, std::chrono::milliseconds{2000});
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(*got == 2);
    BOOST_TEST(read_within(me, p, "z", later, std::chrono::milliseconds{2000}).value_or(-1) == 0);
    // Its own key waits: below the prepare time it is served, above not.
    BOOST_TEST(read_within(me, p, "x", x->prepare_time - 1, std::chrono::milliseconds{2000})
                 .value_or(-1)
               == 0);
    BOOST_TEST(!read_within(me, p, "x", later, std::chrono::milliseconds{300}).has_value());
    // A read of x parked now is answered once the decision is applied.
    part_read_req r;
    r.snapshot = vector_clock{{local_dc, later}};
    r.items = {read_item{object_key{"b", "x"}, crdt_type::counter, {}}};
    std::optional<std::int64_t> parked;
    std::atomic<bool> answered{false};
    auto reader = spawn_self_only(sys, [&, r](caf::event_based_actor* self) {
      self->request(p, std::chrono::seconds{10}, part_read_atom::value, encode_wire(r))
        .then(
          [&](std::string& bytes) {
            auto resp = decode_wire<part_read_resp>(bytes);
            if (resp && !resp->err && resp->values.size() == 1)
              parked = std::get<std::int64_t>(resp->values[0]);
            answered = true;
          },
          [&](caf::error&) { answered = true; });
    });
    std::this_thread::sleep_for(std::chrono::milliseconds{100}); // parked by now
    BOOST_TEST(!answered.load());
    me->request(p, std::chrono::seconds{5}, part_commit_atom::value,
                encode_wire(part_commit_req{{1, 2}, x->prepare_time + 1}))
      .receive([](std::string&) {}, [](caf::error&) {});
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
    while (!answered.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    BOOST_REQUIRE(answered.load());
    BOOST_TEST(parked.value_or(-1) == 5);
    caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(reader, caf::exit_reason::user_shutdown);
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
