// End to end: the client library against a real tallyd, launched on a free
// loopback port with a fresh data directory. Compiled only when CMake
// defines TALLYD_PATH (the tallyd binary, $<TARGET_FILE:tallyd>),
// i.e. when the tallyd target exists in the build.
#ifdef TALLYD_PATH

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <csignal>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/client.hpp"
#include "tests/support/seeded_rng.hpp"
#include "tests/support/tallyd_process.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

/// Waits `ms` milliseconds. Only for letting a launched process start or
/// for timing a SIGCONT; the client code under test never sleeps.
void pause_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  while (::nanosleep(&ts, &ts) != 0) {
  }
}

/// A tallyd child process (tests/support/tallyd_process.hpp) with its own
/// data directory; stopped, and the directory removed, at the end.
class tallyd_process {
public:
  tallyd_process() : node_(dir_.path + "/data", "batch") {
    BOOST_REQUIRE_MESSAGE(node_.start(),
                          "tallyd did not start and accept connections");
  }
  std::uint16_t port() const { return node_.port; }
  pid_t pid() const { return node_.pid; }

private:
  tally::test::temp_dir dir_; // declared first: outlives the process
  tally::test::server node_;
};

client connect_to(std::uint16_t port, std::chrono::milliseconds timeout,
                  unsigned retries) {
  client_options opts;
  opts.port = port;
  opts.timeout = timeout;
  opts.retries = retries;
  auto c = client::connect(opts);
  BOOST_REQUIRE_MESSAGE(c.has_value(),
                        (c ? std::string{} : c.err().to_string()));
  return std::move(*c);
}

bound_object counter(std::size_t bucket, std::string key) {
  return {object_key{"e2e-" + std::to_string(bucket), std::move(key)},
          crdt_type::counter};
}

counter_inc inc(std::size_t bucket, std::string key, std::int64_t delta) {
  return {object_key{"e2e-" + std::to_string(bucket), std::move(key)}, delta};
}

std::int64_t value_of(client& c, const bound_object& object) {
  auto r = c.read({object});
  BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.err().to_string()));
  return r->values.at(0);
}

/// The cases need the tallyd binary; a build of test_client alone may not
/// have built it (it is not a build dependency, so a node that does not
/// build yet cannot break the client suite).
boost::test_tools::assertion_result
tallyd_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result ok{::access(TALLYD_PATH, X_OK)
                                         == 0};
  if (!ok)
    ok.message() << TALLYD_PATH << " is not built (build target tallyd)";
  return ok;
}

} // namespace

BOOST_AUTO_TEST_SUITE(e2e, *boost::unit_test::precondition(tallyd_built))

BOOST_AUTO_TEST_CASE(static_pipelined_and_interactive_updates_sum_exactly) {
  tallyd_process node;
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    auto c = connect_to(node.port(), 2000ms, 2);
    // The node keeps one FBF per partition and bucket, sized for a modest
    // rate (6250 bits): spreading the updates over buckets keeps each
    // filter's false-positive rate negligible, so a lost update here means
    // a bug, not a Bloom filter false positive (docs/CLIENT.md).
    const std::size_t buckets = 64;
    std::vector<std::int64_t> x(buckets, 0), y(buckets, 0);
    std::vector<bound_object> xs, ys;
    for (std::size_t b = 0; b < buckets; ++b) {
      xs.push_back(counter(b, "x"));
      ys.push_back(counter(b, "y"));
    }
    for (int i = 0; i < 100; ++i) {
      auto b = rng.uniform(0, buckets - 1);
      auto d = rng.uniform_signed(-1000, 1000);
      BOOST_REQUIRE(c.update({inc(b, "x", d)}));
      x[b] += d;
    }
    auto p = c.make_pipeline();
    for (int i = 0; i < 500; ++i) {
      auto b = rng.uniform(0, buckets - 1);
      auto d = rng.uniform_signed(-1000, 1000);
      p.update({inc(b, "x", d), inc(b, "y", 1)});
      x[b] += d;
      ++y[b];
    }
    for (auto& r : p.collect())
      BOOST_REQUIRE_MESSAGE(r.has_value(),
                            (r ? std::string{} : r.err().to_string()));
    auto rx = c.read(xs); // one snapshot, after the session's commits
    auto ry = c.read(ys);
    BOOST_REQUIRE(rx.has_value() && ry.has_value());
    BOOST_TEST(rx->values == x, boost::test_tools::per_element());
    BOOST_TEST(ry->values == y, boost::test_tools::per_element());

    auto tx = c.start();
    BOOST_REQUIRE(tx.has_value());
    BOOST_REQUIRE(tx->update({inc(0, "x", 7), inc(1, "y", -2)}));
    auto seen = tx->read({counter(0, "x"), counter(1, "y")});
    BOOST_REQUIRE(seen.has_value());
    BOOST_TEST(*seen == (std::vector<std::int64_t>{x[0] + 7, y[1] - 2}),
               boost::test_tools::per_element());
    BOOST_REQUIRE(tx->commit());
    x[0] += 7;
    y[1] -= 2;
    auto r = c.read({counter(0, "x"), counter(1, "y")});
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(r->values == (std::vector<std::int64_t>{x[0], y[1]}),
               boost::test_tools::per_element());
    // An aborted transaction leaves nothing.
    auto tx2 = c.start();
    BOOST_REQUIRE(tx2.has_value());
    BOOST_REQUIRE(tx2->update({inc(0, "x", 1000000)}));
    BOOST_REQUIRE(tx2->abort());
    BOOST_TEST(value_of(c, counter(0, "x")) == x[0]);
  }
}

BOOST_AUTO_TEST_CASE(an_update_resent_with_its_op_ids_is_applied_once) {
  tallyd_process node;
  auto c = connect_to(node.port(), 2000ms, 3);
  auto id = c.next_op_id();
  counter_inc u{object_key{"e2e-once", "k"}, 5, crdt_type::counter, id};
  BOOST_REQUIRE(c.update({u}));
  BOOST_REQUIRE(c.update({u})); // acknowledged, dismissed by the FBF
  BOOST_TEST(value_of(c, {object_key{"e2e-once", "k"}, crdt_type::counter})
             == 5);
}

// Issue 16: a map update with a nested increment, resent with its op id
// (as the client's retries do), is applied once; a new op id applies again.
BOOST_AUTO_TEST_CASE(a_map_update_resent_with_its_op_id_counts_its_nested_increment_once) {
  tallyd_process node;
  auto c = connect_to(node.port(), 2000ms, 3);
  const object_key cart{"e2e-map", "cart"};
  auto update = map_op(cart, {update_op{bound_object{{"", "apples"}, crdt_type::counter},
                                        counter_op{counter_update{3}, std::nullopt}},
                              set_add_op({"", "tags"}, {"red"})});
  auto apples = [&] {
    auto r = c.read_values({{cart, crdt_type::rrmap}});
    BOOST_REQUIRE_MESSAGE(r, (r ? std::string{} : r.err().to_string()));
    for (const auto& e : std::get<map_value>(r->values.at(0)).entries)
      if (e.key == map_key{"apples", crdt_type::counter})
        return std::get<std::int64_t>(e.value);
    return std::int64_t{-1};
  };
  std::get<crdt_op>(update.op).id = c.next_op_id();
  BOOST_REQUIRE(c.update_ops({update}));
  BOOST_REQUIRE(c.update_ops({update})); // acknowledged, dismissed
  BOOST_TEST(apples() == 3);
  // update_ops gives a map with a nested counter the next op id itself.
  auto fresh = update;
  std::get<crdt_op>(fresh.op).id.reset();
  BOOST_REQUIRE(c.update_ops({fresh}));
  BOOST_TEST(apples() == 6);
  // The same op id for another delta is refused, nothing applied.
  auto other = map_op(cart, {update_op{bound_object{{"", "apples"}, crdt_type::counter},
                                       counter_op{counter_update{4}, std::nullopt}}});
  std::get<crdt_op>(other.op).id = std::get<crdt_op>(update.op).id;
  auto refused = c.update_ops({other});
  BOOST_REQUIRE(!refused);
  BOOST_TEST(refused.err().message().find("conflicting reuse") != std::string::npos);
  BOOST_TEST(apples() == 6);
}

BOOST_AUTO_TEST_CASE(retries_across_a_paused_node_apply_each_update_once) {
  tallyd_process node;
  auto c = connect_to(node.port(), 200ms, 5); // retry window 2 s < R = 5 s
  BOOST_REQUIRE(c.update({inc(100, "paused", 1)}));
  // Pause the node; a helper resumes it after ~2 client timeouts, so the
  // first send has been received (and will be applied) and resent at
  // least once.
  ::kill(node.pid(), SIGSTOP);
  pid_t helper = ::fork();
  BOOST_REQUIRE(helper >= 0);
  if (helper == 0) {
    pause_ms(450);
    ::kill(node.pid(), SIGCONT);
    ::_exit(0);
  }
  auto clock = c.update({inc(100, "paused", 10)});
  int st = 0;
  ::waitpid(helper, &st, 0);
  BOOST_REQUIRE_MESSAGE(clock.has_value(),
                        (clock ? std::string{} : clock.err().to_string()));
  BOOST_TEST(c.retries_done() >= 1u);
  BOOST_TEST(value_of(c, counter(100, "paused")) == 11);
}

// Sets, registers, flags and maps through the client library against a real
// tallyd: static and interactive, a wrong type refused, and every value
// read back after a SIGKILL and a restart (format-2 effects from the
// journal).
BOOST_AUTO_TEST_CASE(sets_registers_flags_and_maps_end_to_end_and_after_a_restart) {
  using strings = std::vector<std::string>;
  tally::test::temp_dir dir;
  tally::test::server node{dir.path + "/data", "batch"};
  BOOST_REQUIRE(node.start());
  const object_key tags{"typed", "tags"}, motto{"typed", "motto"},
    open{"typed", "open"}, m{"typed", "map"}, rw{"typed", "rw"};
  std::vector<bound_object> objects{{tags, crdt_type::orset},
                                    {motto, crdt_type::mvreg},
                                    {open, crdt_type::flag_dw},
                                    {m, crdt_type::rrmap},
                                    {rw, crdt_type::rwset}};
  map_value want_map;
  want_map.entries.push_back({map_key{"n", crdt_type::counter}, crdt_value{std::int64_t{2}}});
  const std::vector<crdt_value> want{crdt_value{strings{"green", "red"}},
                                     crdt_value{strings{"b"}}, crdt_value{true},
                                     crdt_value{want_map}, crdt_value{strings{"y"}}};
  {
    auto c = connect_to(node.port, 2000ms, 2);
    auto clock = c.update_ops({set_add_op(tags, {"red", "blue", "green"}),
                               register_assign_op(motto, "a", crdt_type::mvreg),
                               flag_op(open, true, crdt_type::flag_dw),
                               map_op(m, {update_op{bound_object{{"", "n"}, crdt_type::counter},
                                                    counter_op{counter_update{2}, std::nullopt}},
                                          set_add_op({"", "s"}, {"x"})}),
                               set_add_op(rw, {"x", "y"}, crdt_type::rwset)});
    BOOST_REQUIRE_MESSAGE(clock, (clock ? std::string{} : clock.err().to_string()));
    auto tx = c.start();
    BOOST_REQUIRE(tx);
    BOOST_REQUIRE(tx->update_ops({set_remove_op(tags, {"blue"}),
                                  register_assign_op(motto, "b", crdt_type::mvreg),
                                  map_op(m, {}, {map_key{"s", crdt_type::orset}}),
                                  set_remove_op(rw, {"x"}, crdt_type::rwset)}));
    auto mine = tx->read_values(objects);
    BOOST_REQUIRE_MESSAGE(mine, (mine ? std::string{} : mine.err().to_string()));
    BOOST_TEST((*mine == want));
    BOOST_REQUIRE(tx->commit());
    auto r = c.read_values(objects);
    BOOST_REQUIRE_MESSAGE(r, (r ? std::string{} : r.err().to_string()));
    BOOST_TEST((r->values == want));
    BOOST_TEST(format_value(r->values[0], crdt_type::orset) == "{green, red}");
    BOOST_TEST(format_value(r->values[1], crdt_type::mvreg) == "[b]");
    // A key keeps its type: nothing of a refused update is stored.
    auto bad = c.update_ops({set_add_op(tags, {"z"}),
                             register_assign_op(tags, "v", crdt_type::lwwreg)});
    BOOST_REQUIRE(!bad);
    BOOST_TEST(bad.err().code() == errc::wrong_type);
    auto counter_on_set = c.update({counter_inc{tags, 1}});
    BOOST_REQUIRE(!counter_on_set);
    BOOST_TEST(counter_on_set.err().message().find("orset") != std::string::npos);
    // read() is for counters.
    BOOST_TEST(c.read({objects[0]}).err().code() == errc::wrong_type);
    // A bounded counter: 3 rights, 2 spent, 2 more refused.
    const object_key stock{"typed", "stock"};
    BOOST_REQUIRE(c.update_ops({b_counter_op(stock, 3)}));
    BOOST_REQUIRE(c.update_ops({b_counter_op(stock, -2)}));
    auto over = c.update_ops({b_counter_op(stock, -2)});
    BOOST_REQUIRE(!over);
    BOOST_TEST(over.err().code() == errc::no_permissions);
    auto left = c.read_values({{stock, crdt_type::bcounter}});
    BOOST_REQUIRE(left);
    BOOST_TEST((left->values.at(0) == crdt_value{std::int64_t{1}}));
  }
  node.stop(SIGKILL); // batch durability: every commit answered is on disk
  BOOST_REQUIRE(node.start());
  auto c = connect_to(node.port, 2000ms, 2);
  auto r = c.read_values(objects);
  BOOST_REQUIRE_MESSAGE(r, (r ? std::string{} : r.err().to_string()));
  BOOST_TEST((r->values == want));
}

BOOST_AUTO_TEST_SUITE_END()

#endif // TALLYD_PATH
