// The chaos suite's short mode (issue 13; docs/RELIABILITY.md): a real
// tallyd on 127.0.0.1 under load from several sessions while a nemesis
// kills it with SIGKILL and restarts it, and pauses it with SIGSTOP; the
// recorded history is then judged by the checkers of history.hpp.
//
// Bounded in time and count: TALLY_CHAOS_SECONDS (default 8) of load, a
// kill every ~1.5 s (at most 3 in the short mode) and one pause; every
// request waits at most 10 s (try_connect's receive timeout). The seed is
// printed (TALLY_TEST_SEED replays the same operation choices; the timing
// of faults is the machine's).
//
// Sessions send no clock: the node's session floors must give them
// read-your-writes and monotonic reads. A reconnect starts a new session
// (the floor lives with the connection).
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "tests/actors/node_process_support.hpp"
#include "tests/chaos/history.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
namespace chaos = tally::chaos;
using chaos::history;
using chaos::op_record;
using chaos::outcome;
using chaos::violation;
using namespace tally::test;

namespace {

using steady = std::chrono::steady_clock;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count());
}

const std::vector<std::string> counters{"c0", "c1", "c2", "c3"};
const std::vector<std::pair<std::string, std::string>> pairs{{"x0", "y0"}, {"x1", "y1"}};

std::vector<std::string> all_keys() {
  auto out = counters;
  for (const auto& [x, y] : pairs) {
    out.push_back(x);
    out.push_back(y);
  }
  return out;
}

update_op counter_inc(const std::string& k, std::int64_t d, op_id id) {
  return update_op{bound_object{object_key{"chaos", k}, crdt_type::counter},
                   counter_op{counter_update{d}, id}};
}

static_read_objects_req read_all() {
  static_read_objects_req r;
  for (const auto& k : all_keys())
    r.objects.push_back(bound_object{object_key{"chaos", k}, crdt_type::counter});
  return r;
}

bool acked(const std::optional<response>& r) {
  auto* c = r ? std::get_if<commit_resp>(&*r) : nullptr;
  return c && c->success;
}

// One client session after another (a reconnect is a new session).
class session_runner {
public:
  session_runner(int index, std::uint64_t seed, std::atomic<std::uint16_t>& port,
                 steady::time_point until)
      : index_(index), rng_(seed ^ (0x9E3779B97F4A7C15ULL * (index + 1))), port_(port),
        until_(until) {}

  history run() {
    connect();
    while (steady::now() < until_) {
      auto pick = rng_() % 10;
      if (pick < 4)
        write(chaos::op_kind::inc);
      else if (pick < 5)
        write(chaos::op_kind::pair);
      else if (pick < 6)
        write(chaos::op_kind::pair_interactive);
      else
        read();
    }
    return std::move(h_);
  }

private:
  void connect() {
    ++session_;
    for (int i = 0; i < 200; ++i) { // bounded: a restart takes well under 10 s
      client_ = wire_client{port_.load()};
      if (client_.connected())
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  int session_id() const { return index_ * 1000 + session_; }

  // An update, retried with the same op ids over new connections until
  // acknowledged (or the time is up): its outcome is ok, or unknown.
  void write(chaos::op_kind kind) {
    op_record op;
    op.kind = kind;
    op.delta = static_cast<std::int64_t>(1 + rng_() % 3);
    static_update_objects_req req;
    if (kind == chaos::op_kind::inc) {
      op.keys = {counters[rng_() % counters.size()]};
      req.updates = {counter_inc(op.keys[0], op.delta, op_id{std::uint64_t(100 + index_), ++seq_})};
    } else {
      const auto& [x, y] = pairs[rng_() % pairs.size()];
      op.keys = {x, y};
      req.updates = {counter_inc(x, op.delta, op_id{std::uint64_t(100 + index_), ++seq_}),
                     counter_inc(y, op.delta, op_id{std::uint64_t(100 + index_), ++seq_})};
    }
    op.session = session_id();
    op.invoke_ns = now_ns();
    auto give_up = until_ + std::chrono::seconds(15);
    for (int attempt = 0; attempt < 50 && steady::now() < give_up; ++attempt) {
      bool done = kind == chaos::op_kind::pair_interactive ? interactive(req.updates)
                                                           : acked(client_.call(req));
      if (done) {
        op.result = outcome::ok;
        break;
      }
      // No answer or an error: it may or may not have been applied; the
      // retry carries the same op ids, so it cannot be applied twice.
      op.result = outcome::unknown;
      client_.close();
      connect();
    }
    op.complete_ns = now_ns();
    h_.push_back(std::move(op));
  }

  // One interactive transaction with `ups` (no client clock: the
  // connection's session floor applies); true when its commit was
  // acknowledged. A retry runs it again with the same op ids.
  bool interactive(const std::vector<update_op>& ups) {
    auto s = client_.call(start_transaction_req{});
    auto* st = s ? std::get_if<start_transaction_resp>(&*s) : nullptr;
    if (!st || !st->success)
      return false;
    auto u = client_.call(update_objects_req{ups, st->transaction_descriptor});
    auto* ok = u ? std::get_if<operation_resp>(&*u) : nullptr;
    if (!ok || !ok->success)
      return false;
    return acked(client_.call(commit_transaction_req{st->transaction_descriptor}));
  }

  void read() {
    op_record op;
    op.kind = chaos::op_kind::read;
    op.keys = all_keys();
    op.session = session_id();
    op.invoke_ns = now_ns();
    auto r = client_.call(read_all());
    auto* s = r ? std::get_if<static_read_objects_resp>(&*r) : nullptr;
    if (s && s->objects.success) {
      op.result = outcome::ok;
      for (const auto& v : s->objects.values)
        op.values.push_back(std::get<std::int64_t>(v));
    } else {
      op.result = r && std::holds_alternative<error_resp>(*r) ? outcome::failed : outcome::unknown;
      client_.close();
      connect();
    }
    op.complete_ns = now_ns();
    h_.push_back(std::move(op));
  }

  int index_;
  std::mt19937_64 rng_;
  std::atomic<std::uint16_t>& port_;
  steady::time_point until_;
  wire_client client_;
  int session_ = 0;
  std::uint64_t seq_ = 0;
  history h_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(chaos_runs)

BOOST_AUTO_TEST_CASE(kill_9_and_pauses_lose_double_and_tear_nothing) {
  seeded_rng rng;
  double seconds = 8;
  if (const char* s = std::getenv("TALLY_CHAOS_SECONDS"))
    seconds = std::max(2.0, std::atof(s));
  const int sessions = 4;
  const int max_kills = seconds > 8 ? 1000 : 3;
  temp_dir d;
  server node{d.path, "batch"};
  BOOST_REQUIRE(node.start());
  std::atomic<std::uint16_t> port{node.port};
  auto until = steady::now()
               + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));

  std::vector<history> histories(sessions);
  std::vector<std::thread> workers;
  for (int i = 0; i < sessions; ++i)
    workers.emplace_back([&, i] {
      histories[std::size_t(i)] = session_runner{i, rng.seed, port, until}.run();
    });

  // The nemesis: kill -9 and restart every ~1.5 s, one SIGSTOP of 0.5 s.
  int kills = 0, pauses = 0, restarts_failed = 0;
  while (steady::now() + std::chrono::milliseconds(1500) < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng.uniform(0, 500)));
    if (pauses == 0) {
      ::kill(node.pid, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ::kill(node.pid, SIGCONT);
      ++pauses;
      continue;
    }
    if (kills >= max_kills)
      continue;
    node.stop(SIGKILL);
    ++kills;
    if (!node.start())
      ++restarts_failed;
    port = node.port;
  }
  for (auto& t : workers)
    t.join();

  // The final values, read on a fresh connection after the last fault.
  std::map<std::string, std::int64_t> final_values;
  {
    wire_client c{node.port};
    auto r = c.call(read_all());
    BOOST_REQUIRE_MESSAGE(r && std::holds_alternative<static_read_objects_resp>(*r),
                          "the final read failed: " << c.last_error);
    auto keys = all_keys();
    const auto& values = std::get<static_read_objects_resp>(*r).objects.values;
    for (std::size_t i = 0; i < keys.size() && i < values.size(); ++i)
      final_values[keys[i]] = std::get<std::int64_t>(values[i]);
  }
  BOOST_TEST(node.stop(SIGTERM) == 0);

  history all;
  std::size_t ok = 0, unknown = 0, failed = 0, interactive_ok = 0;
  for (auto& h : histories)
    for (auto& op : h) {
      ok += op.result == outcome::ok;
      interactive_ok += op.result == outcome::ok && op.kind == chaos::op_kind::pair_interactive;
      unknown += op.result == outcome::unknown;
      failed += op.result == outcome::failed;
      all.push_back(std::move(op));
    }
  BOOST_TEST_MESSAGE("TALLY_TEST_SEED=" << rng.seed << ": " << all.size() << " operations ("
                                        << ok << " ok, " << unknown << " unknown, " << failed
                                        << " failed; " << interactive_ok
                                        << " interactive pairs ok), " << kills << " kills, "
                                        << pauses << " pauses");
  BOOST_TEST(restarts_failed == 0);
  BOOST_TEST(kills >= 1);
  BOOST_TEST(ok > 100u); // the load went on between the faults
  BOOST_TEST(interactive_ok > 0u); // interactive transactions are in the history
  std::vector<violation> found;
  for (auto v : chaos::check_counter_bounds(all, final_values))
    found.push_back(v);
  for (auto v : chaos::check_pair_atomicity(all, pairs))
    found.push_back(v);
  for (auto v : chaos::check_sessions(all))
    found.push_back(v);
  for (const auto& v : found)
    BOOST_ERROR(v.checker << ": " << v.detail << " (TALLY_TEST_SEED=" << rng.seed << ")");
  BOOST_TEST(found.empty());
}

BOOST_AUTO_TEST_SUITE_END()
