// Cluster tests (docs/CLUSTER.md, "Tests"): real tallyd processes on
// 127.0.0.1 forming one cluster, driven by the client library.
//
// Worker threads make no Boost.Test call (Boost.Test is not thread-safe):
// each records what it saw and any violation as text; the test thread joins
// them and checks. Randomness is seeded (seed printed; replay with
// TALLY_TEST_SEED=<seed>); every loop is bounded.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/atoms.hpp"
#include "actors/handoff.hpp"
#include "actors/node_links.hpp"
#include "actors/wire.hpp"
#include "tests/cluster/cluster_support.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/latency_bounds.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::test;

namespace {

using clock_type = std::chrono::steady_clock;

// What one load thread did: per key, increments acknowledged and attempted
// (an unacknowledged one may or may not have been applied).
struct load_record {
  std::map<std::string, std::int64_t> acked;
  std::map<std::string, std::int64_t> attempted;
  std::vector<std::string> clocks;
  std::uint64_t failures = 0;
  std::string first_failure;
};

// Increments random keys of `keys` through the node on `port` until `stop`
// (bounded by `max_ops`), with op ids (the client resends with the same ids).
void increment_load(std::uint16_t port, const std::vector<object_key>& keys,
                    std::uint64_t seed, std::atomic<bool>& stop, std::size_t max_ops,
                    load_record& rec, std::atomic<std::uint64_t>& progress) {
  std::mt19937_64 gen{seed};
  auto c = connect_to(port);
  if (!c) {
    rec.failures = 1;
    rec.first_failure = "connect: " + c.err().to_string();
    return;
  }
  for (std::size_t n = 0; n < max_ops && !stop.load(); ++n) {
    const auto& k = keys[gen() % keys.size()];
    rec.attempted[k.key] += 1;
    auto r = c->update({counter_inc{k, 1}});
    ++progress;
    if (r) {
      rec.acked[k.key] += 1;
      rec.clocks.push_back(*r);
    } else {
      if (rec.failures++ == 0)
        rec.first_failure = r.err().to_string();
      auto again = connect_to(port);
      if (again)
        c = std::move(again);
    }
  }
}

// Reads `keys` at a snapshot covering every clock in `recs` through `port`
// and checks acked <= value <= attempted per key. Returns the violations;
// `exact` is set when every value equals its acknowledged sum.
std::vector<std::string> check_sums(std::uint16_t port, const std::vector<object_key>& keys,
                                    const std::vector<load_record>& recs, bool& exact) {
  std::map<std::string, std::int64_t> acked, attempted;
  std::vector<std::string> clocks;
  for (const auto& r : recs) {
    for (const auto& [k, v] : r.acked)
      acked[k] += v;
    for (const auto& [k, v] : r.attempted)
      attempted[k] += v;
    clocks.insert(clocks.end(), r.clocks.begin(), r.clocks.end());
  }
  std::vector<std::string> bad;
  exact = true;
  auto c = connect_to(port);
  if (!c)
    return {"connect: " + c.err().to_string()};
  auto got = c->read(bound(keys), join_clocks(clocks));
  if (!got)
    return {"final read: " + got.err().to_string()};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto v = got->values[i];
    auto a = acked[keys[i].key];
    auto t = attempted[keys[i].key];
    if (v != a)
      exact = false;
    if (v < a || v > t)
      bad.push_back(keys[i].key + ": value " + std::to_string(v) + " outside [acked "
                    + std::to_string(a) + ", attempted " + std::to_string(t) + "]");
  }
  return bad;
}

// Waits (bounded) until `progress` reaches `target`; false on the limit.
bool wait_progress(const std::atomic<std::uint64_t>& progress, std::uint64_t target,
                   std::chrono::milliseconds limit = std::chrono::milliseconds{30000}) {
  auto deadline = clock_type::now() + limit;
  while (progress.load() < target) {
    if (clock_type::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Waits (bounded) until the process of `s` has exited by itself.
bool wait_exit(server& s, std::chrono::milliseconds limit) {
  auto deadline = clock_type::now() + limit;
  for (;;) {
    int status = 0;
    if (::waitpid(s.pid, &status, WNOHANG) == s.pid) {
      s.pid = -1;
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    if (clock_type::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<object_key> load_keys(std::size_t n) {
  std::vector<object_key> out;
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(object_key{"load", "key" + std::to_string(i)});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_tests)

// Writers increment one key per partition (so every node) by one in each
// static or interactive transaction, through different nodes; readers read the group at
// one snapshot through other nodes. No read may see the group unequal
// (fractured or non-atomic commit); a writer's read through another node
// with its commit clock sees its own writes; a session's reads never go
// back; at the end every key equals the number of acknowledged commits.
BOOST_AUTO_TEST_CASE(three_nodes_keep_tcc_across_nodes) {
  local_cluster cl;
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto group = one_key_per_partition("tcc");
  std::mutex mu;
  std::vector<std::string> violations;
  std::atomic<std::int64_t> commits{0};
  std::vector<std::string> final_clocks;
  auto note = [&](const std::string& v) {
    std::lock_guard<std::mutex> g{mu};
    if (violations.size() < 20)
      violations.push_back(v);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w)
    threads.emplace_back([&, w] {
      auto c = connect_to(cl.nodes[w]->port);
      auto other = connect_to(cl.nodes[(w + 1) % 3]->port);
      if (!c || !other)
        return note("writer cannot connect");
      std::int64_t mine = 0;
      std::string last;
      for (int n = 0; n < 60; ++n) {
        auto ups = increments(group);
        auto clock = c->update(ups);
        if (!clock)
          return note("writer " + std::to_string(w) + ": " + clock.err().to_string());
        ++mine;
        ++commits;
        last = *clock;
        // Read-your-writes through another node.
        auto r = other->read(bound(group), *clock);
        if (!r)
          return note("read-your-writes read: " + r.err().to_string());
        for (auto v : r->values)
          if (v < mine)
            note("read-your-writes: read " + std::to_string(v) + " after " +
                 std::to_string(mine) + " own commits");
      }
      std::lock_guard<std::mutex> g{mu};
      final_clocks.push_back(last);
    });
  // Interactive transactions through node 2 over every node's partitions:
  // one snapshot for all reads, their own updates visible before commit.
  threads.emplace_back([&] {
    auto c = connect_to(cl.nodes[2]->port);
    if (!c)
      return note("interactive: cannot connect");
    for (int n = 0; n < 30; ++n) {
      auto tx = c->start();
      if (!tx)
        return note("interactive start: " + tx.err().to_string());
      auto before = tx->read(bound(group));
      if (!before)
        return note("interactive read: " + before.err().to_string());
      for (auto v : *before)
        if (v != (*before)[0])
          return note("interactive: fractured snapshot");
      auto ups = increments(group);
      if (auto u = tx->update(ups); !u)
        return note("interactive update: " + u.err().to_string());
      auto after = tx->read(bound(group));
      if (!after)
        return note("interactive read: " + after.err().to_string());
      for (std::size_t i = 0; i < after->size(); ++i)
        if ((*after)[i] != (*before)[i] + 1)
          return note("interactive: own update not read back");
      auto clock = tx->commit();
      if (!clock)
        return note("interactive commit: " + clock.err().to_string());
      ++commits;
      std::lock_guard<std::mutex> g{mu};
      final_clocks.push_back(*clock);
    }
  });
  for (int rd = 0; rd < 2; ++rd)
    threads.emplace_back([&, rd] {
      auto c = connect_to(cl.nodes[(rd + 2) % 3]->port);
      if (!c)
        return note("reader cannot connect");
      std::int64_t seen = 0;
      for (int n = 0; n < 150; ++n) {
        auto r = c->read(bound(group)); // the session clock: monotonic reads
        if (!r)
          return note("reader: " + r.err().to_string());
        for (auto v : r->values)
          if (v != r->values[0])
            return note("fractured read: values differ in one snapshot");
        if (r->values[0] < seen)
          note("monotonic reads: " + std::to_string(r->values[0]) + " after " +
               std::to_string(seen));
        seen = r->values[0];
      }
    });
  for (auto& t : threads)
    t.join();
  BOOST_TEST(violations.empty(), "first violations: " << (violations.empty() ? "" : violations[0]));
  auto c = connect_to(cl.nodes[1]->port);
  BOOST_REQUIRE(c);
  auto end = c->read(bound(group), join_clocks(final_clocks));
  BOOST_REQUIRE(end);
  for (auto v : end->values)
    BOOST_TEST(v == commits.load());
}

// A fourth node joins while increments run through two nodes, then another
// node leaves: the partitions change owner by handoff under load both
// times, with journals that checkpoints keep folding and truncating. Every key ends at the sum of acknowledged increments: none lost,
// none doubled, and no increment failed.
BOOST_AUTO_TEST_CASE(join_and_leave_under_load_lose_and_double_nothing) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    local_cluster cl;
    // Frequent checkpoints with a short retention: the partitions that move
    // have folded and truncated journals (checkpoint entries travel too).
    cl.extra = {"--checkpoint-interval-ms", "100", "--snapshot-retention-ms", "300"};
    for (int i = 0; i < 3; ++i)
      BOOST_REQUIRE(cl.add());
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    auto keys = load_keys(64);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> progress{0};
    std::vector<load_record> recs(2);
    std::vector<std::thread> load;
    // Through nodes 0 and 2; node 1 is the one that leaves.
    for (int w = 0; w < 2; ++w)
      load.emplace_back(increment_load, cl.nodes[w * 2]->port, std::cref(keys), rng.gen(),
                        std::ref(stop), 100000, std::ref(recs[w]), std::ref(progress));
    bool ran = wait_progress(progress, 300);
    bool joined = ran && cl.add();
    bool serving = joined && cl.wait_serving({3});
    bool ran_after_join = serving && wait_progress(progress, progress.load() + 300);
    std::string left;
    if (ran_after_join) {
      auto admin = connect_admin(cl.nodes[0]->dir);
      auto id = "tally@127.0.0.1:" + std::to_string(cl.nodes[1]->cluster_port);
      auto r = admin ? admin->admin("leave", {id}) : expected<std::string>{admin.err()};
      left = r ? "" : r.err().to_string();
    }
    bool exited = ran_after_join && left.empty()
                  && wait_exit(*cl.nodes[1], std::chrono::seconds(30));
    bool ran_after_leave = exited && wait_progress(progress, progress.load() + 300);
    stop = true;
    for (auto& t : load)
      t.join();
    BOOST_REQUIRE(ran);
    BOOST_REQUIRE(joined);
    BOOST_REQUIRE(serving);
    BOOST_REQUIRE(ran_after_join);
    BOOST_TEST_REQUIRE(left.empty(), left);
    BOOST_REQUIRE(exited); // the leaving node stops by itself, exit code 0
    BOOST_REQUIRE(ran_after_leave);
    std::uint64_t failures = recs[0].failures + recs[1].failures;
    BOOST_TEST_MESSAGE("increments: " << progress.load() << ", failures: " << failures);
    BOOST_TEST(failures == 0u, "first failure: " << recs[0].first_failure
                                                   << recs[1].first_failure);
    bool exact = false;
    auto bad = check_sums(cl.nodes[3]->port, keys, recs, exact);
    BOOST_TEST(bad.empty(), (bad.empty() ? "" : bad[0]));
    BOOST_TEST(exact);
  }
}

// kill -9 of one node under load (durability full): requests for its
// partitions fail fast with a clear "down" error while the others succeed;
// after its restart every acknowledged increment is there, none doubled.
BOOST_AUTO_TEST_CASE(kill_9_of_a_node_fails_its_partitions_fast_and_loses_nothing) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    local_cluster cl{"full"};
    for (int i = 0; i < 3; ++i)
      BOOST_REQUIRE(cl.add());
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    auto keys = load_keys(48);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> progress{0};
    std::vector<load_record> recs(1);
    std::thread load{increment_load, cl.nodes[0]->port, std::cref(keys), rng.gen(),
                     std::ref(stop), 600, std::ref(recs[0]), std::ref(progress)};
    // The kill lands in the middle of the load.
    bool ran = wait_progress(progress, 200);
    cl.nodes[2]->stop(SIGKILL);
    load.join();
    BOOST_REQUIRE(ran);
    BOOST_TEST(recs[0].failures > 0u); // the dead node's share failed...
    BOOST_TEST(recs[0].failures < 600u); // ...and only that
    // Reads of single keys through node 0: those on the dead node's
    // partitions fail fast and say so; every other key is served.
    auto c = connect_to(cl.nodes[0]->port);
    BOOST_REQUIRE(c);
    std::set<std::uint32_t> failed_parts, served_parts;
    std::string message;
    for (const auto& k : keys) {
      auto t0 = clock_type::now();
      auto r = c->read({bound_object{k, crdt_type::counter}});
      auto took = clock_type::now() - t0;
      auto p = *partition_for(k.bucket, k.key, cluster_partitions);
      if (r) {
        served_parts.insert(p);
      } else {
        failed_parts.insert(p);
        message = r.err().to_string();
        BOOST_TEST(r.err().code() == errc::unavailable);
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
        BOOST_TEST(ms < 1000); // fails fast: no timeout, no resend
      }
    }
    BOOST_TEST(!failed_parts.empty());
    BOOST_TEST(!served_parts.empty());
    for (auto p : failed_parts)
      BOOST_TEST(served_parts.count(p) == 0u); // per partition, never both
    BOOST_TEST(message.find("down") != std::string::npos, "message: " << message);
    // Back: it rejoins from its own ring and serves with all it acknowledged.
    BOOST_REQUIRE(cl.restart(2));
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    bool exact = false;
    auto bad = check_sums(cl.nodes[1]->port, keys, recs, exact);
    BOOST_TEST(bad.empty(), (bad.empty() ? "" : bad[0]));
    BOOST_TEST_MESSAGE("acknowledged before the kill or refused after: "
                       << recs[0].failures << " failures, exact = " << exact);
  }
}

// Writes through the survivors of a kill -9 of one node of three, each
// attempt a write of one key per partition, from the kill until one
// commits through each (bounded: 30 s); the milliseconds it took per
// survivor (-1: never), and the errors seen before.
std::vector<long long> time_to_write(local_cluster& cl, const std::vector<std::size_t>& through,
                                     clock_type::time_point killed_at,
                                     std::vector<std::string>& why) {
  const auto group = one_key_per_partition("failover");
  std::vector<long long> ms(through.size(), -1);
  why.assign(through.size(), {});
  std::vector<std::thread> probes;
  for (std::size_t i = 0; i < through.size(); ++i)
    probes.emplace_back([&, i] {
      auto ups = increments(group);
      while (clock_type::now() < killed_at + std::chrono::seconds(30)) {
        auto c = connect_to(cl.nodes[through[i]]->port);
        auto r = c ? c->update(ups) : expected<std::string>{c.err()};
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           clock_type::now() - killed_at).count();
        if (r) {
          ms[i] = now;
          return;
        }
        why[i] += (why[i].empty() ? "" : "; ") + std::to_string(now) + " ms: "
                  + r.err().to_string();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  for (auto& t : probes)
    t.join();
  return ms;
}

// n_val 3 (docs/REPLICATION.md): one node of three killed mid-load. Every
// partition fails over to a surviving copy, so every key stays served
// through the survivors, and nothing acknowledged is lost; once the
// failover is done, writes do not fail at all. The node comes back, catches
// up, and every node reads the same values.
//
// It was disabled in the default run while the failover stall of issue 14
// made it fail (5 of 5 runs alone in stop 12): the kill came before the
// copies the joins had opened empty were filled, so some partition had its
// only current copy on the killed node (docs/REPLICATION.md, "Failover").
// wait_settled now waits for n_val current copies of every partition.
BOOST_AUTO_TEST_CASE(with_three_copies_a_kill_9_loses_nothing_and_every_key_stays_served) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    local_cluster cl{"batch"};
    BOOST_REQUIRE(start_three_copies(cl)); // a kill during a handoff: docs/REPLICATION.md
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    auto keys = load_keys(48);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> progress{0};
    std::vector<load_record> recs(3);
    std::thread load{increment_load, cl.nodes[0]->port, std::cref(keys), rng.gen(),
                     std::ref(stop), 600, std::ref(recs[0]), std::ref(progress)};
    bool ran = wait_progress(progress, 200);
    cl.nodes[2]->stop(SIGKILL);
    const auto killed_at = clock_type::now();
    // While the load goes on: every partition writable through each
    // survivor, timed from the kill.
    std::vector<std::string> why;
    const auto writable_ms = time_to_write(cl, {0, 1}, killed_at, why);
    load.join();
    BOOST_REQUIRE(ran);
    BOOST_TEST_MESSAGE("during the failover: " << recs[0].failures << " of 600 failed"
                                               << (recs[0].failures ? ", first: " : "")
                                               << recs[0].first_failure);
    for (std::size_t n : {0u, 1u})
      BOOST_REQUIRE_MESSAGE(writable_ms[n] >= 0, "no write to every partition through node "
                                                   << n << " within 30 s: " << why[n]);
    BOOST_TEST_MESSAGE("every partition writable through node 0 " << writable_ms[0]
                       << " ms and through node 1 " << writable_ms[1]
                       << " ms after the kill" << (why[0].empty() ? "" : "; node 0 failed: ")
                       << why[0] << (why[1].empty() ? "" : "; node 1 failed: ") << why[1]);
    // Issue 14: every key served again within about 2 s (measured: 15-465
    // ms in 20 runs on this 2-core machine with a load average of 5-19).
    for (std::size_t n : {0u, 1u})
      BOOST_TEST(writable_ms[n] < 2000, "through node " << n << ": " << writable_ms[n]
                                                       << " ms; " << why[n]);
    BOOST_REQUIRE(cl.wait_serving({0, 1}));
    bool exact = false;
    auto bad = check_sums(cl.nodes[1]->port, keys, recs, exact);
    BOOST_TEST(bad.empty(), (bad.empty() ? "" : bad[0]));
    // After the failover, fewer than 1% of the writes through the survivors
    // fail (issue 14's bar).
    progress = 0;
    std::thread a{increment_load, cl.nodes[0]->port, std::cref(keys), rng.gen(),
                  std::ref(stop), 200, std::ref(recs[1]), std::ref(progress)};
    std::thread b{increment_load, cl.nodes[1]->port, std::cref(keys), rng.gen(),
                  std::ref(stop), 200, std::ref(recs[2]), std::ref(progress)};
    a.join();
    b.join();
    BOOST_TEST_MESSAGE("after the failover: " << recs[1].failures + recs[2].failures
                                              << " of 400 failed");
    BOOST_TEST(recs[1].failures + recs[2].failures < 4u,
               recs[1].first_failure << " / " << recs[2].first_failure);
    // Back: it catches up from the survivors; every node reads the same.
    BOOST_REQUIRE(cl.restart(2));
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    for (std::size_t n = 0; n < 3; ++n) {
      bad = check_sums(cl.nodes[n]->port, keys, recs, exact);
      BOOST_TEST(bad.empty(), "through node " << n << ": " << (bad.empty() ? "" : bad[0]));
    }
    // Node 2's own copies hold the same journal ends as the primaries': a
    // load through it now succeeds and is acknowledged by a majority.
    std::vector<load_record> more(1);
    progress = 0;
    increment_load(cl.nodes[2]->port, keys, rng.gen(), stop, 100, more[0], progress);
    BOOST_TEST(more[0].failures == 0u, more[0].first_failure);
  }
}

// Issue 14's failover stall, pinned: a write through a survivor whose
// prepare is in flight to a primary when that primary's node is killed.
// CAF never fails a request to a node whose link is lost (it times out,
// CAF-NOTES.md), so the coordinator waited its request timeout (10 s) with
// the write's op ids prepared on the other partitions, and the client's
// resends waited behind them: a write through a survivor failed for 3 s
// (the client's retry window) or more in 3 of 5 runs of the test above,
// though every partition had a new primary within milliseconds. Now the
// call fails as soon as the membership sees the node down
// (actors/remote_calls.hpp), and the write through the survivor, retried,
// commits. Node 2 is paused first so that the prepare is surely in flight
// (on its socket, unread) when the kill comes.
BOOST_AUTO_TEST_CASE(with_three_copies_a_write_in_flight_to_a_killed_primary_fails_at_once) {
  local_cluster cl{"batch"};
  BOOST_REQUIRE(start_three_copies(cl));
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  // One key per partition: a two-phase commit with a prepare on every
  // primary, so on node 2's (it leads the partitions it owns).
  const auto group = one_key_per_partition("inflight");
  auto ups = increments(group);
  ::kill(cl.nodes[2]->pid, SIGSTOP);
  // The client waits long (no resend of its own), longer than the node's
  // request timeout: the answer it gets is the node's.
  std::atomic<bool> answered{false};
  std::string first_answer;
  clock_type::time_point answered_at;
  std::thread writer{[&] {
    auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{30000});
    auto r = c ? c->update(ups) : expected<std::string>{c.err()};
    first_answer = r ? std::string{"committed"} : r.err().to_string();
    answered_at = clock_type::now();
    answered = true;
  }};
  // Long enough for the prepares to be sent; well below the heartbeats'
  // 2 s, after which the paused node would be declared down anyway.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const bool pending_at_kill = !answered.load();
  cl.nodes[2]->stop(SIGKILL);
  const auto killed_at = clock_type::now();
  writer.join();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                      answered_at - killed_at).count();
  BOOST_TEST_MESSAGE("the write in flight was answered " << took << " ms after the kill: "
                     << first_answer);
  BOOST_TEST_REQUIRE(pending_at_kill); // node 2 led a partition: its prepare waited
  // The node's failure detection is at once for a kill -9 (the link
  // closes); 2 s leaves room for a loaded machine, far below the request
  // timeout (10 s) the call waited before.
  BOOST_TEST(took < 2000, "answered " << took << " ms after the kill: " << first_answer);
  BOOST_TEST(first_answer.find("down or unreachable") != std::string::npos, first_answer);
  // Retried (new op ids: the first attempt failed, none of it was applied
  // or it is aborted), it commits through the survivor within about 2 s.
  bool wrote = false;
  std::string why;
  while (!wrote && clock_type::now() < killed_at + std::chrono::seconds(10)) {
    auto c = connect_to(cl.nodes[0]->port);
    auto r = c ? c->update(ups) : expected<std::string>{c.err()};
    wrote = r.has_value();
    if (!wrote) {
      why = r.err().to_string();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const auto writable = std::chrono::duration_cast<std::chrono::milliseconds>(
                          clock_type::now() - killed_at).count();
  BOOST_TEST_MESSAGE("a write to every partition committed through node 0 " << writable
                     << " ms after the kill");
  BOOST_REQUIRE_MESSAGE(wrote, why);
  BOOST_TEST(writable < 2000, "writable " << writable << " ms after the kill");
}

// The 3 s failover of a CI run of stop 31, pinned: a write through a
// survivor whose prepare reaches a replica that still follows the killed
// primary. The replica passes it on (docs/REPLICATION.md, "A replica passes
// requests on to its primary") to the dead node's actor, where it is lost
// without a word, and used to answer only at the node's request timeout
// (10 s), holding the transaction's op ids prepared on the other
// partitions. Node 1 is paused across the kill of node 2, so that node 0's
// routes already name node 1's copies for node 2's partitions while node 1
// has not yet heard of the kill: what node 1 reads first when it resumes
// (node 0's prepares or its own news of the kill) decides whether a
// prepare is passed on to node 2. Now the replica answers such a request
// as soon as it is reconfigured, and the client's write, retried with the
// same op ids, commits within about 2 s of the resume.
BOOST_AUTO_TEST_CASE(with_three_copies_a_prepare_passed_on_to_a_killed_primary_fails_at_once) {
  local_cluster cl{"batch"};
  BOOST_REQUIRE(start_three_copies(cl));
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  const auto group = one_key_per_partition("passedon");
  auto ups = increments(group);
  BOOST_REQUIRE(::kill(cl.nodes[1]->pid, SIGSTOP) == 0);
  cl.nodes[2]->stop(SIGKILL);
  // The client's own resends (1 s deadline, 2 resends with the same op
  // ids, then a new update) keep going for 30 s at most.
  std::atomic<bool> wrote{false};
  std::string why;
  clock_type::time_point wrote_at;
  std::thread writer{[&] {
    const auto start = clock_type::now();
    while (!wrote && clock_type::now() < start + std::chrono::seconds(30)) {
      auto c = connect_to(cl.nodes[0]->port);
      auto r = c ? c->update(ups) : expected<std::string>{c.err()};
      if (r) {
        wrote_at = clock_type::now();
        wrote = true;
      } else {
        why = r.err().to_string();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }};
  // Long enough for node 0 to see node 2 down and route to node 1's copies,
  // well below the heartbeats' 2 s that would count node 1 down.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  BOOST_REQUIRE(::kill(cl.nodes[1]->pid, SIGCONT) == 0);
  const auto resumed_at = clock_type::now();
  writer.join();
  BOOST_REQUIRE_MESSAGE(wrote, "no write through node 0 within 30 s: " << why);
  const auto ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(wrote_at - resumed_at).count();
  BOOST_TEST_MESSAGE("a write to every partition committed through node 0 " << ms
                     << " ms after node 1 resumed" << (why.empty() ? "" : "; last failure: ")
                     << why);
  BOOST_TEST(ms < 2000, ms << " ms; " << why);
}

// Issue 14's failover stall, second cause pinned: a node configures its
// copies only once it has heard from every member, or 3 s after its start
// (so that a restarted node does not lead with a stale copy before it knows
// who leads now). That rule also held after a member died: a survivor
// younger than 3 s left its copies unconfigured until then, so the
// partitions the dead node led had no primary (or no second copy taking
// writes) for up to 3 s. bench/failover.sh kills right after a restart and
// settle: the 2.2-3.0 s mode of its bimodal figures. Now a node that has
// heard from every member once stays settled. Node 1 is restarted, then
// node 2 killed as soon as the cluster has settled again.
BOOST_AUTO_TEST_CASE(with_three_copies_a_kill_9_right_after_a_restart_fails_over_at_once) {
  local_cluster cl{"batch"};
  BOOST_REQUIRE(start_three_copies(cl));
  cl.nodes[1]->stop(SIGTERM);
  const auto restarted_at = clock_type::now();
  BOOST_REQUIRE(cl.restart(1));
  BOOST_REQUIRE(cl.wait_settled());
  cl.nodes[2]->stop(SIGKILL);
  const auto killed_at = clock_type::now();
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(
                     killed_at - restarted_at).count();
  std::vector<std::string> why;
  auto ms = time_to_write(cl, {0, 1}, killed_at, why);
  BOOST_TEST_MESSAGE("node 1 restarted " << age << " ms before the kill; every partition "
                     "writable through node 0 " << ms[0] << " ms and through node 1 "
                     << ms[1] << " ms after the kill");
  // 2 s: issue 14's bound; before the fix, a write waited for node 1 to be
  // 3 s old (a restart and a settle take well under 1 s here).
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST(ms[i] >= 0, "no write through node " << i << ": " << why[i]);
    BOOST_TEST(ms[i] < 2000, "through node " << i << ": " << ms[i] << " ms; " << why[i]);
  }
}

// The rows of the replication table of `cluster status` (n_val > 1):
// partition -> its fields "p | primary | term | journal end | copies".
std::map<std::uint32_t, std::vector<std::string>> replication_rows(const std::string& text) {
  std::map<std::uint32_t, std::vector<std::string>> rows;
  std::istringstream in{text};
  bool table = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("partition | primary | term", 0) == 0) {
      table = true;
      continue;
    }
    if (!table || line.empty() || !std::isdigit(static_cast<unsigned char>(line[0])))
      continue;
    std::vector<std::string> f;
    for (std::size_t at = 0;;) {
      auto bar = line.find(" | ", at);
      f.push_back(line.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
      if (bar == std::string::npos)
        break;
      at = bar + 3;
    }
    if (f.size() == 5)
      rows[static_cast<std::uint32_t>(std::stoul(f[0]))] = f;
  }
  return rows;
}

// Issue 14, "Operations": with n_val 3, `cluster status` shows each
// partition's primary, its term and journal end, and each other copy with
// its lag (the primary's journal end minus the end it knows that copy
// holds). After writes, every copy catches up (lag 0 everywhere); after a
// kill -9, the dead node leads nothing and its copies are listed as down.
BOOST_AUTO_TEST_CASE(with_three_copies_cluster_status_shows_replicas_primary_and_lag) {
  local_cluster cl{"batch"};
  BOOST_REQUIRE(start_three_copies(cl));
  std::vector<std::string> ids;
  for (const auto& n : cl.nodes)
    ids.push_back("tally@127.0.0.1:" + std::to_string(n->cluster_port));
  const auto group = one_key_per_partition("status");
  auto ups = increments(group);
  {
    auto c = connect_to(cl.nodes[0]->port);
    BOOST_REQUIRE(c);
    for (int i = 0; i < 5; ++i)
      BOOST_REQUIRE(c->update(ups));
  }
  // Every partition: a primary among the members, a term, a journal end
  // past the writes, the two other members as its copies, lag 0 (bounded
  // wait: the last acknowledgements reach the primary after the answer).
  std::string text;
  bool caught_up = false;
  for (auto deadline = clock_type::now() + std::chrono::seconds(10);
       !caught_up && clock_type::now() < deadline;) {
    text = status_of_dir(cl.dir_of(1));
    auto rows = replication_rows(text);
    caught_up = rows.size() == cluster_partitions;
    for (const auto& [p, f] : rows) {
      const bool member = std::find(ids.begin(), ids.end(), f[1]) != ids.end();
      std::size_t others = 0;
      for (const auto& id : ids)
        if (id != f[1] && f[4].find(id + " lag 0") != std::string::npos)
          ++others;
      caught_up = caught_up && member && std::stoull(f[2]) > 0 && std::stoull(f[3]) > 5
                  && others == 2;
    }
    if (!caught_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST_MESSAGE("status with three copies:\n" << text);
  BOOST_TEST(caught_up, text);
  // Node 2 killed: it leads nothing, and where it holds a copy, it is down.
  cl.nodes[2]->stop(SIGKILL);
  bool moved = false;
  for (auto deadline = clock_type::now() + std::chrono::seconds(10);
       !moved && clock_type::now() < deadline;) {
    text = status_of_dir(cl.dir_of(0));
    auto rows = replication_rows(text);
    moved = rows.size() == cluster_partitions;
    for (const auto& [p, f] : rows)
      moved = moved && f[1] != ids[2] && f[1] != "none"
              && f[4].find(ids[2] + " down") != std::string::npos;
    if (!moved)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_TEST(moved, text);
}

// kill -9 of a node while transactions spanning every node commit, with
// coordinators on every node: some are left prepared on the killed node,
// with their commit record on other nodes or nowhere, and some the killed
// node coordinated are left prepared on the others. After the restart each
// is whole or absent everywhere
// (docs/CLUSTER.md, "Recovery of undecided transactions"), so the group's
// keys read equal, between the acknowledged and the attempted count.
void group_stays_atomic_across_a_kill_9(const std::string& n_val) {
  local_cluster cl{"full"};
  cl.extra = {"--request-timeout-ms", "1000", "--n-val", n_val};
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  if (n_val != "1")
    BOOST_REQUIRE(cl.wait_settled()); // a kill during a handoff: docs/REPLICATION.md
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto group = one_key_per_partition("atomic");
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> progress{0};
  std::mutex mu;
  std::int64_t acked = 0, attempted = 0;
  std::vector<std::string> clocks;
  std::vector<std::thread> writers;
  // Through every node: the killed node's coordinators die too, leaving
  // prepared transactions on the other nodes for them to resolve.
  for (int w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      auto c = connect_to(cl.nodes[w]->port);
      for (int n = 0; c && n < 5000 && !stop.load(); ++n) {
        auto ups = increments(group);
        {
          std::lock_guard<std::mutex> g{mu};
          ++attempted;
        }
        auto r = c->update(ups);
        ++progress;
        std::lock_guard<std::mutex> g{mu};
        if (r) {
          ++acked;
          clocks.push_back(*r);
        }
      }
    });
  bool ran = wait_progress(progress, 150);
  cl.nodes[2]->stop(SIGKILL);
  bool ran_after = ran && wait_progress(progress, progress.load() + 20);
  stop = true;
  for (auto& t : writers)
    t.join();
  BOOST_REQUIRE(ran);
  BOOST_REQUIRE(ran_after);
  if (n_val != "1") {
    // Replicated: the survivors serve the whole group before node 2 is
    // back, atomically and with every acknowledged transaction (bounded
    // retries while the dead coordinators' transactions are decided).
    auto deadline = clock_type::now() + std::chrono::seconds(30);
    expected<read_result> before = make_error(errc::unavailable, "not read yet");
    while (clock_type::now() < deadline) {
      auto c = connect_to(cl.nodes[0]->port);
      if (c && (before = c->read(bound(group), join_clocks(clocks))))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    BOOST_REQUIRE_MESSAGE(before, (before ? "" : before.err().to_string()));
    for (auto v : before->values) {
      BOOST_TEST(v == before->values[0]);
      BOOST_TEST(v >= acked);
      BOOST_TEST(v <= attempted);
    }
  }
  BOOST_REQUIRE(cl.restart(2));
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}, std::chrono::seconds(30)));
  auto c = connect_to(cl.nodes[0]->port);
  BOOST_REQUIRE(c);
  auto got = c->read(bound(group), join_clocks(clocks));
  BOOST_REQUIRE(got);
  BOOST_TEST_MESSAGE("group transactions: " << acked << " acknowledged of " << attempted);
  for (auto v : got->values) {
    BOOST_TEST(v == got->values[0]); // atomic: all or nothing on every node
    BOOST_TEST(v >= acked);
    BOOST_TEST(v <= attempted);
  }
}

BOOST_AUTO_TEST_CASE(transactions_across_nodes_stay_atomic_across_a_kill_9) {
  group_stays_atomic_across_a_kill_9("1");
}

// The same with three copies of every partition (docs/REPLICATION.md).
BOOST_AUTO_TEST_CASE(with_three_copies_transactions_stay_atomic_across_a_kill_9) {
  group_stays_atomic_across_a_kill_9("3");
}

// Issue 13, defect 2: transactions left prepared on the survivors by a
// node's coordinators when it was killed, or paused long enough to be
// declared down (its links dropped with commits or aborts in flight), used
// to block their partitions for 3 request timeouts (30 s by default) even
// when the node was back at once. Now they are decided as soon as the node
// is back: a restarted node has a new run (its old coordinators can no
// longer commit); a resumed one answers that its coordinator is done with
// them. A commit over every partition through a survivor, then a read at
// its clock (which waits for every transaction prepared below it), takes
// well under a second, not 30 (it timed out at 10 s before). The pause case
// has its own test below. Returns the milliseconds from the node's return
// to the read's answer.
long long decide_after(local_cluster& cl, const std::function<void()>& fault,
                       const std::function<bool()>& back) {
  auto group = one_key_per_partition("decided");
  auto ups = increments(group);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> progress{0};
  // Several writers through node 2: its coordinators are in the middle of
  // two-phase commits over every partition when the fault hits.
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&] {
      auto c = connect_to(cl.nodes[2]->port);
      for (int n = 0; c && n < 20000 && !stop.load(); ++n) {
        (void)c->update(ups);
        ++progress;
      }
    });
  bool ran = wait_progress(progress, 200);
  fault();
  stop = true;
  for (auto& t : writers)
    t.join();
  BOOST_REQUIRE(ran);
  BOOST_REQUIRE(back());
  auto t0 = std::chrono::steady_clock::now();
  auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{40000});
  BOOST_REQUIRE(c);
  expected<std::string> w = make_error(errc::unavailable, "not tried");
  for (int i = 0; i < 100 && !w; ++i) { // bounded: node 2's partitions come back
    w = c->update(ups);
    if (!w)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  BOOST_REQUIRE_MESSAGE(w, (w ? "" : w.err().to_string()));
  auto got = c->read(bound(group), *w);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - t0)
                  .count();
  BOOST_REQUIRE_MESSAGE(got, (got ? "" : got.err().to_string()));
  for (auto v : got->values)
    BOOST_TEST(v == got->values[0]); // atomic
  return waited;
}

BOOST_AUTO_TEST_CASE(a_killed_coordinators_prepared_transactions_are_decided_within_seconds) {
  local_cluster cl{"full"}; // the default --request-timeout-ms, 10 s
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto waited = decide_after(
    cl, [&] { cl.nodes[2]->stop(SIGKILL); }, [&] { return cl.restart(2); });
  BOOST_TEST_MESSAGE("after the restart: " << waited << " ms");
  BOOST_TEST(waited < 10000); // was about 30,000 (3 x --request-timeout-ms)
}

// Issue 13, the pause case: a 4 s SIGSTOP of one node of three (n_val 1)
// under two-phase load through every node. Its coordinators leave
// transactions prepared on the survivors, and the survivors' coordinators
// leave some waiting for its prepares. Meanwhile the survivors serve every
// read those transactions cannot affect: a commit over the survivors'
// partitions and a read at its clock, through a survivor, of keys the load
// does not write (before, that read waited for the paused node's
// transactions, up to the 10 s request timeout). After SIGCONT the holders
// ask the participants the prepare records name and the coordinator at
// once; a coordinator still waiting for its prepares aborts (its messages
// were lost with the links), one that decided says so. A commit over every
// partition and a read at its clock through a survivor (which waits for
// every transaction prepared below it) then take 0.5-1 s from SIGCONT
// (before: 10 s, or a timeout, docs/CLUSTER.md "A paused coordinator").
BOOST_AUTO_TEST_CASE(a_paused_coordinators_prepared_transactions_are_decided_within_seconds) {
  local_cluster cl{"full"}; // the default --request-timeout-ms, 10 s
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_settled()); // who serves what is fixed from here
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto group = one_key_per_partition("paused");
  auto ups = increments(group);
  // Keys the load never writes, on the partitions the survivors serve.
  std::vector<object_key> other;
  auto others = one_key_per_partition("meanwhile");
  for (std::uint32_t p = 0; p < cluster_partitions; ++p)
    if (!std::filesystem::exists(partition_dir(cl.dir_of(2), p)))
      other.push_back(others[p]);
  BOOST_REQUIRE(other.size() >= 2u); // a two-phase commit over survivors
  BOOST_REQUIRE(other.size() < cluster_partitions); // node 2 serves some
  auto other_ups = increments(other);

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> progress{0};
  std::mutex mu;
  std::int64_t acked = 0;
  std::vector<std::thread> writers;
  for (int w = 0; w < 6; ++w) // two per node
    writers.emplace_back([&, w] {
      auto c = connect_to(cl.nodes[static_cast<std::size_t>(w % 3)]->port);
      for (int n = 0; c && n < 20000 && !stop.load(); ++n) {
        auto r = c->update(ups);
        ++progress;
        if (r) {
          std::lock_guard<std::mutex> g{mu};
          ++acked;
        } else if (auto again = connect_to(cl.nodes[static_cast<std::size_t>(w % 3)]->port)) {
          c = std::move(again);
        }
      }
    });
  BOOST_REQUIRE(wait_progress(progress, 300));
  ::kill(cl.nodes[2]->pid, SIGSTOP);
  const auto paused = clock_type::now();
  // Once node 2 is declared down (heartbeats: 2 s; polled, bounded: its
  // partitions answer "unavailable"), a commit over the survivors'
  // partitions and a read at its clock, of keys the stuck transactions do
  // not write.
  object_key on_paused;
  for (std::uint32_t p = 0; p < cluster_partitions; ++p)
    if (std::filesystem::exists(partition_dir(cl.dir_of(2), p)))
      on_paused = others[p];
  bool detected = false;
  while (!detected && clock_type::now() < paused + std::chrono::milliseconds(3500)) {
    auto probe = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{200});
    auto r = probe ? probe->read({bound_object{on_paused, crdt_type::counter}})
                   : expected<read_result>{probe.err()};
    detected = !r && r.err().code() == errc::unavailable;
  }
  BOOST_TEST_MESSAGE("node 2 declared down after "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(
                          clock_type::now() - paused)
                          .count()
                     << " ms");
  BOOST_REQUIRE(detected);
  long long meanwhile_ms = -1;
  std::string meanwhile_error;
  {
    auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{12000});
    if (!c) {
      meanwhile_error = c.err().to_string();
    } else {
      auto t0 = clock_type::now();
      auto w = c->update(other_ups);
      auto got = w ? c->read(bound(other), *w) : expected<read_result>{w.err()};
      if (got)
        meanwhile_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         clock_type::now() - t0)
                         .count();
      else
        meanwhile_error = got.err().to_string();
    }
  }
  // The rest of the 4 s pause, then SIGCONT.
  std::this_thread::sleep_until(paused + std::chrono::milliseconds(4000));
  BOOST_REQUIRE(::kill(cl.nodes[2]->pid, SIGCONT) == 0);
  const auto resumed = clock_type::now();
  stop = true;
  // A commit over every partition (retried until node 2's partitions serve
  // again: bounded) and a read at its clock, through a survivor.
  auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{40000});
  BOOST_REQUIRE(c);
  expected<std::string> w = make_error(errc::unavailable, "not tried");
  for (int i = 0; i < 200 && !w; ++i) {
    w = c->update(ups);
    if (!w)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_REQUIRE_MESSAGE(w, (w ? "" : w.err().to_string()));
  auto got = c->read(bound(group), *w);
  auto decided_ms =
    std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - resumed).count();
  for (auto& t : writers)
    t.join();
  BOOST_TEST_MESSAGE("during the pause, a commit and read of other keys through a survivor: "
                     << meanwhile_ms << " ms; after SIGCONT, a commit and read of every "
                     << "partition: " << decided_ms << " ms (" << acked << " commits acked)");
  BOOST_TEST(meanwhile_ms >= 0, "the read during the pause failed: " << meanwhile_error);
  BOOST_TEST(meanwhile_ms < 3000); // a timeout (10 s) before
  BOOST_REQUIRE_MESSAGE(got, (got ? "" : got.err().to_string()));
  for (auto v : got->values)
    BOOST_TEST(v == got->values[0]); // atomic
  // 0.5-1 s measured; 10 s or a timeout before (9 s under TSan, latency_bounds.hpp)
  BOOST_TEST(decided_ms < 3000 * latency_bound_scale);
}

// The entries `tally inspect --deep` reads in partition p of the data dir
// `dir` (next to the running node: it only reads); -1 when not found.
long long inspected_entries(const std::string& dir, std::uint32_t p) {
  temp_dir work;
  std::filesystem::create_directories(work.path);
  child_process tally{TALLY_CLI_PATH, {"inspect", "--deep", dir}, work.path};
  if (!tally.started() || tally.wait(std::chrono::milliseconds{60000}) < 0)
    return -1;
  std::istringstream in{slurp(tally.out)};
  const std::string head = "partition " + std::to_string(p) + ": ok,";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(head, 0) != 0)
      continue;
    auto end = line.find(" entries read");
    auto start = end == std::string::npos ? end : line.rfind(", ", end);
    if (start != std::string::npos)
      return std::stoll(line.substr(start + 2, end - start - 2));
  }
  return -1;
}

// Issue 13, a coordinator's node down for good (n_val 1, kill -9, not
// restarted): a transaction it left prepared on a survivor, decided at no
// reachable participant, stays prepared, as it must (its other
// participants are on the dead node). After 3 request timeouts it is set
// aside: its partition checkpoints again and its journal stays bounded
// under load (before, it grew by every commit: 4 entries each), while
// reads of other keys are served and its own key
// waits (measured with `tally inspect --deep`, which counts the entries of
// every database). When the node is back, it is decided (a commit at a time the
// checkpoint passed is folded into the checkpoint store) and the group
// reads equal everywhere.
BOOST_AUTO_TEST_CASE(a_live_partitions_journal_stays_bounded_while_a_dead_coordinators_transaction_waits) {
  local_cluster cl{"batch"};
  // Set aside after 3 s; checkpoints 5 times a second keeping 0.5 s; a
  // small FBF, so that commits with op ids (the client always sends them)
  // leave the log after about 2 s (docs/NODE.md, "Exactly-once").
  cl.extra = {"--request-timeout-ms", "1000", "--checkpoint-interval-ms", "200",
              "--snapshot-retention-ms", "500", "--fbf-refresh-ms", "100",
              "--fbf-past-filters", "1", "--fbf-retry-timeout-ms", "200"};
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_settled());
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto group = one_key_per_partition("stuck");
  auto mine = one_key_per_partition("load");
  auto ups = increments(group);
  auto node_of = [&](std::uint32_t p) -> std::size_t {
    for (std::size_t n = 0; n < 3; ++n)
      if (std::filesystem::exists(partition_dir(cl.dir_of(n), p)))
        return n;
    return 3;
  };
  // Kill node 2 under two-phase load through it until a survivor's
  // partition is left holding one of its transactions with no decision
  // anywhere reachable (bounded: a kill leaves one in most runs; 5
  // attempts once left none in about 45 runs on a loaded machine).
  std::optional<std::uint32_t> stuck;
  std::optional<std::string> stuck_clock; // a snapshot above its prepare
  std::int64_t acked = 0;
  int kills = 0;
  for (int attempt = 0; attempt < 12 && !stuck; ++attempt) {
    ++kills;
    if (attempt > 0) {
      BOOST_REQUIRE(cl.restart(2));
      BOOST_REQUIRE(cl.wait_serving({0, 1, 2}, std::chrono::seconds(30)));
    }
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> progress{0};
    std::vector<std::thread> writers;
    std::mutex mu;
    for (int w = 0; w < 2; ++w)
      writers.emplace_back([&] {
        auto c = connect_to(cl.nodes[2]->port);
        for (int n = 0; c && n < 20000 && !stop.load(); ++n) {
          auto r = c->update(ups);
          ++progress;
          std::lock_guard<std::mutex> g{mu};
          acked += r ? 1 : 0;
        }
      });
    BOOST_REQUIRE(wait_progress(progress, 100));
    cl.nodes[2]->stop(SIGKILL);
    stop = true;
    for (auto& t : writers)
      t.join();
    // Give the survivors 3 s to decide what they can (a commit found at a
    // reachable participant), then look for a key still held.
    const auto killed = clock_type::now();
    auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{500});
    BOOST_REQUIRE(c);
    std::this_thread::sleep_until(killed + std::chrono::seconds(3));
    for (std::uint32_t p = 0; p < cluster_partitions && !stuck; ++p) {
      if (node_of(p) == 2)
        continue;
      auto w = c->update({counter_inc{mine[p], 1}}); // a clock above the kill
      if (!w) {
        if (auto again = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{500}))
          c = std::move(again);
        continue;
      }
      auto r = c->read({bound_object{group[p], crdt_type::counter}}, *w);
      if (!r && r.err().code() == errc::timeout) {
        stuck = p;
        stuck_clock = *w;
      }
      if (auto again = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{500}))
        c = std::move(again); // a fresh connection after a timeout
    }
  }
  BOOST_REQUIRE_MESSAGE(stuck, "none of " << kills
                                          << " kills left a transaction prepared on a survivor");
  const auto p = *stuck;
  const auto holder = cl.dir_of(node_of(p));
  BOOST_TEST_MESSAGE("partition " << p << " holds a dead coordinator's transaction (kill "
                                  << kills << ")");
  // Load on another key of that partition, through node 0.
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> loaded{0};
  std::thread loader([&] {
    auto c = connect_to(cl.nodes[0]->port);
    for (int n = 0; c && n < 200000 && !stop.load(); ++n)
      if (c->update({counter_inc{mine[p], 1}}))
        ++loaded;
  });
  // Set aside after 3 request timeouts, then the FBF's keep (2 s) and a
  // few checkpoints: measure over the 10 s after that.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  const auto e1 = inspected_entries(holder, p);
  const auto l1 = loaded.load();
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const auto e2 = inspected_entries(holder, p);
  const auto l2 = loaded.load();
  stop = true; // joined before any check can end the test
  loader.join();
  // Its other keys are served at fresh snapshots; its own waits.
  auto c = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{3000});
  BOOST_REQUIRE(c);
  auto fresh = c->update({counter_inc{mine[p], 1}});
  BOOST_REQUIRE_MESSAGE(fresh, (fresh ? "" : fresh.err().to_string()));
  auto other = c->read({bound_object{mine[p], crdt_type::counter}}, *fresh);
  BOOST_TEST(other.has_value(), (other ? "" : other.err().to_string()));
  auto held = c->read({bound_object{group[p], crdt_type::counter}}, *fresh);
  BOOST_TEST(!held.has_value()); // still undecided: its coordinator's node is down
  BOOST_TEST_MESSAGE("partition " << p << ": " << e1 << " -> " << e2 << " entries while "
                                  << (l2 - l1) << " commits went to it");
  BOOST_REQUIRE(e1 >= 0);
  BOOST_REQUIRE(e2 >= 0);
  BOOST_TEST(l2 - l1 >= 200); // enough load to tell
  // Before: + 4 entries per commit (update and commit records, an index
  // and an op-id entry), for ever. Now the log keeps about 2 s of commits
  // (the FBF's keep), whose size moves with the load's rate.
  BOOST_TEST(e2 - e1 < 2 * (l2 - l1));
  // Node 2 back: the transaction is decided (its run is over), and the
  // group reads equal, at or above the acknowledged count.
  BOOST_REQUIRE(cl.restart(2));
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}, std::chrono::seconds(30)));
  expected<read_result> got = make_error(errc::unavailable, "not read yet");
  for (int i = 0; i < 100 && !got; ++i) { // bounded: decided within seconds
    auto r = connect_to(cl.nodes[0]->port, std::chrono::milliseconds{2000});
    if (r)
      got = r->read(bound(group), *stuck_clock);
  }
  BOOST_REQUIRE_MESSAGE(got, (got ? "" : got.err().to_string()));
  for (auto v : got->values) {
    BOOST_TEST(v == got->values[0]); // atomic, the late commit included
    BOOST_TEST(v >= acked);
  }
  if (std::adjacent_find(got->values.begin(), got->values.end(), std::not_equal_to<>{})
      != got->values.end()) { // which node serves each value (a torn read seen once)
    std::ostringstream seen;
    for (std::uint32_t q = 0; q < got->values.size(); ++q)
      seen << " p" << q << "@node" << node_of(q) << "=" << got->values[q];
    BOOST_TEST_MESSAGE("group read at the stuck clock:" << seen.str() << " (acked " << acked
                                                        << ", stuck partition " << p << ")");
  }
}

// A node that restarts with a copy of a partition another node owns (a
// crash after a handoff's transfer, before the old copy was deleted) never
// serves it: reads through it see the owner's newer value, and the stale
// copy is deleted once the owner is seen serving the partition.
BOOST_AUTO_TEST_CASE(a_stale_copy_of_a_handed_off_partition_is_never_served) {
  local_cluster cl;
  for (int i = 0; i < 2; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  // A key on a partition node 1 serves.
  auto keys = one_key_per_partition("stale");
  std::optional<object_key> key;
  std::uint32_t part = 0;
  for (std::uint32_t p = 0; p < cluster_partitions && !key; ++p)
    if (std::filesystem::exists(partition_dir(cl.dir_of(1), p))) {
      key = keys[p];
      part = p;
    }
  BOOST_REQUIRE(key);
  auto c = connect_to(cl.nodes[1]->port);
  BOOST_REQUIRE(c);
  BOOST_REQUIRE(c->update({counter_inc{*key, 1}}));
  // Node 1's copy at value 1, taken while it is stopped...
  BOOST_REQUIRE(cl.nodes[1]->stop(SIGTERM) == 0);
  temp_dir stale;
  std::filesystem::copy(partition_dir(cl.dir_of(1), part), stale.path,
                        std::filesystem::copy_options::recursive);
  BOOST_REQUIRE(cl.restart(1));
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  c = connect_to(cl.nodes[1]->port);
  BOOST_REQUIRE(c);
  auto clock = c->update({counter_inc{*key, 1}}); // now 2 at node 1
  BOOST_REQUIRE(clock);
  // ...appears on node 0 as if a handoff had left it there.
  BOOST_REQUIRE(cl.nodes[0]->stop(SIGTERM) == 0);
  std::filesystem::copy(stale.path, partition_dir(cl.dir_of(0), part),
                        std::filesystem::copy_options::recursive);
  BOOST_REQUIRE(cl.restart(0));
  BOOST_REQUIRE(cl.wait_serving({0, 1}));
  auto c0 = connect_to(cl.nodes[0]->port);
  BOOST_REQUIRE(c0);
  auto got = c0->read({bound_object{*key, crdt_type::counter}}, *clock);
  BOOST_REQUIRE(got);
  BOOST_TEST(got->values[0] == 2);
  auto deadline = clock_type::now() + std::chrono::seconds(15);
  while (std::filesystem::exists(partition_dir(cl.dir_of(0), part))
         && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  BOOST_TEST(!std::filesystem::exists(partition_dir(cl.dir_of(0), part)));
}

// A paused node (SIGSTOP) is noticed by the heartbeats: within a bounded
// time its partitions answer "unavailable" instead of hanging, the others
// keep serving, and after SIGCONT it serves again.
BOOST_AUTO_TEST_CASE(a_paused_node_is_detected_and_comes_back) {
  local_cluster cl;
  for (int i = 0; i < 3; ++i)
    BOOST_REQUIRE(cl.add());
  BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
  auto keys = one_key_per_partition("pause");
  ::kill(cl.nodes[2]->pid, SIGSTOP);
  auto c = connect_to(cl.nodes[0]->port);
  BOOST_REQUIRE(c);
  // Bounded: heartbeats every 250 ms, a peer silent for 2 s is down.
  std::size_t unavailable = 0, served = 0;
  auto deadline = clock_type::now() + std::chrono::seconds(15);
  // Until one whole round is answered without a timeout.
  while ((unavailable == 0 || unavailable + served != keys.size())
         && clock_type::now() < deadline) {
    unavailable = served = 0;
    for (const auto& k : keys) {
      auto r = c->read({bound_object{k, crdt_type::counter}});
      if (r)
        ++served;
      else if (r.err().code() == errc::unavailable)
        ++unavailable;
      else if (auto again = connect_to(cl.nodes[0]->port))
        c = std::move(again); // a timeout while the pause is not noticed yet
    }
  }
  ::kill(cl.nodes[2]->pid, SIGCONT);
  BOOST_TEST(unavailable > 0u);
  BOOST_TEST(served > 0u);
  BOOST_TEST(unavailable + served == keys.size());
  BOOST_TEST(cl.wait_serving({0, 1, 2}));
}

// `tally cluster local` starts real nodes that form one cluster, and stops
// them all on SIGTERM.
BOOST_AUTO_TEST_CASE(tally_cluster_local_starts_a_cluster_and_stops_it) {
  temp_dir d;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto base = free_port();
    if (base > 64000)
      continue;
    // A fresh folder per try: a data dir keeps the cluster port it was
    // first started with.
    auto dir = d.path + "/try" + std::to_string(attempt);
    std::filesystem::create_directories(dir);
    child_process tally{TALLY_CLI_PATH,
                        {"cluster", "local", "--nodes", "2", "--data-dir", dir + "/data",
                         "--base-port", std::to_string(base), "--partitions", "8"},
                        dir};
    BOOST_REQUIRE(tally.started());
    // Both nodes serve and see each other as valid, reachable members.
    std::string text;
    auto deadline = clock_type::now() + std::chrono::seconds(20);
    bool exited = false;
    int code = -1;
    while (clock_type::now() < deadline) {
      if (tally.exited(code)) {
        exited = true; // ports taken: try another base
        break;
      }
      auto c = connect_admin(dir + "/data/node1");
      auto r = c ? c->admin("status", {}) : expected<std::string>{c.err()};
      if (r && r->find("2 member(s)") != std::string::npos
          && r->find("DOWN") == std::string::npos
          && r->find("joining") == std::string::npos) {
        text = *r;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (exited) {
      std::istringstream in{slurp(tally.err)};
      std::string line, why;
      while (std::getline(in, line))
        if (line.find("tally:") == 0 || line.find("ERROR") != std::string::npos)
          why += "\n  " + line;
      BOOST_TEST_MESSAGE("tally cluster local stopped (ports taken?):" << why);
      continue;
    }
    ::kill(tally.pid, SIGTERM);
    BOOST_TEST(text.find("valid | up") != std::string::npos, text);
    BOOST_TEST(tally.wait() == 0);
    BOOST_TEST(try_connect(static_cast<std::uint16_t>(base)) < 0); // stopped
    BOOST_TEST(try_connect(static_cast<std::uint16_t>(base + 1)) < 0);
    return;
  }
  BOOST_FAIL("tally cluster local did not start in 5 tries");
}

// Bad cluster input is refused with a clear message and exit code 1.
BOOST_AUTO_TEST_CASE(join_through_a_wrong_address_is_refused) {
  local_cluster cl; // only for its secret file
  temp_dir d;
  auto port = free_port();
  auto r = run_tallyd({"--data-dir", d.path, "--port", std::to_string(free_port()),
                       "--cluster-port", std::to_string(free_port()), "--join",
                       "127.0.0.1:" + std::to_string(port), "--cluster-secret-file",
                       cl.secret_file},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.output.find("cannot join through 127.0.0.1:" + std::to_string(port))
               != std::string::npos,
             r.output);
}

BOOST_AUTO_TEST_CASE(join_with_another_ring_size_is_refused) {
  local_cluster cl;
  BOOST_REQUIRE(cl.add());
  temp_dir d;
  auto r = run_tallyd({"--data-dir", d.path, "--port", std::to_string(free_port()),
                       "--cluster-port", std::to_string(free_port()), "--partitions", "16",
                       "--join", "127.0.0.1:" + std::to_string(cl.nodes[0]->cluster_port),
                       "--cluster-secret-file", cl.secret_file},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.output.find("ring size mismatch") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("--partitions 8") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_CASE(join_through_a_client_port_is_refused) {
  local_cluster cl;
  BOOST_REQUIRE(cl.add());
  temp_dir d;
  auto r = run_tallyd({"--data-dir", d.path, "--port", std::to_string(free_port()),
                       "--cluster-port", std::to_string(free_port()), "--join",
                       "127.0.0.1:" + std::to_string(cl.nodes[0]->port), "--cluster-secret-file",
                       cl.secret_file},
                      std::chrono::seconds(30));
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.output.find("cannot join through") != std::string::npos, r.output);
}

// The version check is the member's: a joiner speaking another node
// protocol version is refused with a message naming both versions.
BOOST_AUTO_TEST_CASE(join_with_an_incompatible_version_is_refused) {
  local_cluster cl;
  BOOST_REQUIRE(cl.add());
  // This test's actor system proves the cluster secret like a node
  // (actors/node_links.hpp), with its credentials in a data dir of its own.
  temp_dir links;
  node_link_security sec;
  sec.secret_file = cl.secret_file;
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  BOOST_REQUIRE(configure_node_links(cfg, sec, links.path, true));
  BOOST_REQUIRE(write_node_link_files(sec, links.path));
  caf::actor_system sys{cfg};
  auto m = remote_cluster_actor(sys, "127.0.0.1", cl.nodes[0]->cluster_port);
  BOOST_REQUIRE_MESSAGE(m, (m ? "" : m.err().to_string()));
  caf::scoped_actor self{sys};
  bool ok = true;
  std::string text;
  self
    ->request(*m, std::chrono::seconds(10), join_atom::value,
              std::uint32_t{wire_version + 1}, cluster_partitions,
              std::string{"tally@127.0.0.1:1"})
    .receive([&](bool b, std::string& t) { ok = b, text = t; },
             [&](caf::error& e) { text = sys.render(e); });
  BOOST_TEST(!ok);
  BOOST_TEST(text.find("incompatible version") != std::string::npos, text);
  caf::anon_send_exit(*m, caf::exit_reason::kill); // no-op on a proxy we do not own
}

BOOST_AUTO_TEST_SUITE_END()
