// The chaos suite's short mode (issue 13; docs/RELIABILITY.md): a real
// tallyd on 127.0.0.1 under load from several sessions while a nemesis
// kills it with SIGKILL and restarts it, and pauses it with SIGSTOP; the
// recorded history is then judged by the checkers of history.hpp.
//
// Bounded in time and count: TALLY_CHAOS_SECONDS (default 8) of load, a
// kill every ~1.5 s (at most 3 in the short mode) and one pause; every
// request waits at most 1 s (workload.hpp). The seed is
// printed (TALLY_TEST_SEED replays the same operation choices; the timing
// of faults is the machine's).
//
// Sessions send no clock: the node's session floors must give them
// read-your-writes and monotonic reads. A reconnect starts a new session
// (the floor lives with the connection).
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <map>
#include <thread>

#include "tests/chaos/workload.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::chaos;
using namespace tally::test;

namespace {

const workload_keys keys{{"c0", "c1", "c2", "c3"}, {{"x0", "y0"}, {"x1", "y1"}}};

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
  node_ports ports{1};
  ports.set(0, node.port);
  auto until = steady::now()
               + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));

  std::atomic<bool> stopping{false};
  std::vector<session_log> logs(sessions);
  std::vector<std::thread> workers;
  for (int i = 0; i < sessions; ++i)
    workers.emplace_back([&, i] {
      logs[std::size_t(i)] = session_runner{i, rng.seed, ports, keys, stopping}.run();
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
    ports.set(0, node.port);
  }
  std::this_thread::sleep_until(until);
  stopping = true;
  for (auto& t : workers)
    t.join();

  // The final values, read on a fresh connection after the last fault.
  std::string why;
  auto final_values = read_values(node.port, keys, why);
  BOOST_REQUIRE_MESSAGE(!final_values.empty(), "the final read failed: " << why);
  BOOST_TEST(node.stop(SIGTERM) == 0);

  auto all = merge(logs);
  std::size_t ok = 0, unknown = 0, failed = 0, interactive_ok = 0;
  for (const auto& op : all.ops) {
    ok += op.result == chaos::outcome::ok;
    interactive_ok += op.result == chaos::outcome::ok && op.kind == chaos::op_kind::pair_interactive;
    unknown += op.result == chaos::outcome::unknown;
    failed += op.result == chaos::outcome::failed;
  }
  BOOST_TEST_MESSAGE("TALLY_TEST_SEED=" << rng.seed << ": " << all.ops.size() << " operations ("
                                        << ok << " ok, " << unknown << " unknown, " << failed
                                        << " failed; " << interactive_ok
                                        << " interactive pairs ok), " << kills << " kills, "
                                        << pauses << " pauses");
  BOOST_TEST(restarts_failed == 0);
  BOOST_TEST(kills >= 1);
  BOOST_TEST(ok > 100u); // the load went on between the faults
  BOOST_TEST(interactive_ok > 0u); // interactive transactions are in the history
  auto found = check_all(all.ops, keys, final_values);
  for (const auto& v : found)
    BOOST_ERROR(v.checker << ": " << v.detail << " (TALLY_TEST_SEED=" << rng.seed << ")");
  BOOST_TEST(found.empty());
}

BOOST_AUTO_TEST_SUITE_END()
