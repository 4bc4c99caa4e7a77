// Issue 14, "Done when": a node of a 3-node cluster with n_val 3 is down
// under load (kill -9), comes back, catches up while every node keeps
// serving, and then holds the same data as the others (docs/REPLICATION.md,
// "A node down under load"). The default run has the issue's 60 s down
// (about 67 s alone, under the 90 s a default test may take); a 10 s
// variant (about 15 s) checks the same properties and runs by name:
//   build/bin/test_cluster --run_test=down_node_tests/with_three_copies_a_node_down_10_s_under_load_catches_up_and_holds_the_same_data
//
// What it checks:
//   - service: through the two other nodes, from 2 s after the kill to the
//     end, fewer than 1% of the writes fail and no pause between two
//     acknowledged writes lasts 2 s or more (also while the node rejoins
//     and catches up); through the returning node, writes are served once
//     it accepts connections, with fewer than 1% failing after its first;
//   - catch-up: every partition has 3 current copies again, and once the
//     load stops every copy's lag is 0 (cluster status);
//   - the same data: the values read through each node at one clock (the
//     join of every acknowledged write's) are equal and within [acknowledged,
//     attempted]; then the nodes are frozen and killed and every copy of
//     every partition is opened from its data dir: the same journal end,
//     the same records (transaction and kind) at the same LSNs, and the same
//     value of every key;
//   - the Bloom clock dependency check (docs/REPLICATION.md, "Dependency
//     check") ran on the real cluster: the returning node's copies checked
//     batches, confirmed positives, and nothing contradicted a negative.
//
// Worker threads make no Boost.Test call; the test thread checks. Seeded
// (TALLY_TEST_SEED); every wait is bounded.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/partition_core.hpp"
#include "replication/dependency_check.hpp"
#include "tests/cluster/cluster_support.hpp"
#include "tests/support/latency_bounds.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::test;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0, clock_type::time_point t) {
  return std::chrono::duration<double>(t - t0).count();
}

// What one load thread did, with the time (s since the test's start) of
// every acknowledged and every failed write.
struct timed_record {
  std::map<std::string, std::int64_t> acked, attempted;
  std::vector<std::string> clocks;
  std::vector<double> acks, fails;
  std::string first_failure;
  std::atomic<std::uint64_t> acknowledged{0}; // read while it runs
};

// Increments random keys through the node whose client port `port()` gives
// until `stop`, with op ids (the client resends with the same ids).
void timed_load(std::function<std::uint16_t()> port, const std::vector<object_key>& keys,
                std::uint64_t seed, const std::atomic<bool>& stop, clock_type::time_point t0,
                timed_record& rec) {
  std::mt19937_64 gen{seed};
  std::optional<client> c;
  while (!stop.load()) {
    if (!c) {
      auto fresh = connect_to(port());
      if (!fresh) {
        rec.fails.push_back(seconds_since(t0, clock_type::now()));
        if (rec.first_failure.empty())
          rec.first_failure = "connect: " + fresh.err().to_string();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      c.emplace(std::move(*fresh));
    }
    const auto& k = keys[gen() % keys.size()];
    rec.attempted[k.key] += 1;
    auto r = c->update({counter_inc{k, 1}});
    const double at = seconds_since(t0, clock_type::now());
    if (r) {
      rec.acked[k.key] += 1;
      rec.clocks.push_back(*r);
      rec.acks.push_back(at);
      ++rec.acknowledged;
    } else {
      rec.fails.push_back(at);
      if (rec.first_failure.empty())
        rec.first_failure = r.err().to_string();
      c.reset(); // a fresh connection next
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

// The longest time in [from, to] without an acknowledged write.
double longest_pause(const std::vector<double>& acks, double from, double to) {
  double last = from, worst = 0;
  for (double a : acks) {
    if (a < from)
      continue;
    if (a > to)
      break;
    worst = std::max(worst, a - last);
    last = a;
  }
  return std::max(worst, to - last);
}

std::size_t count_in(const std::vector<double>& times, double from, double to) {
  return static_cast<std::size_t>(std::count_if(
    times.begin(), times.end(), [&](double t) { return t >= from && t <= to; }));
}

// The status's replication table: true when every partition has a primary
// and every other copy is "lag 0".
bool every_copy_caught_up(const std::string& status) {
  std::istringstream in{status};
  std::size_t rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0])))
      continue;
    if (line.find(" | tally@") == std::string::npos)
      continue;
    ++rows;
    const auto copies = line.substr(line.rfind(" | ") + 3);
    std::size_t lags = 0;
    for (std::size_t at = 0; (at = copies.find("tally@", at)) != std::string::npos; ++at) {
      ++lags;
      const auto comma = copies.find(", ", at);
      const auto entry = copies.substr(at, comma == std::string::npos ? std::string::npos
                                                                         : comma - at);
      if (entry.size() < 6 || entry.substr(entry.size() - 6) != " lag 0")
        return false;
    }
    if (lags != 2)
      return false;
  }
  return rows == cluster_partitions;
}

// One copy of a partition, opened offline from a node's data dir.
struct copy_view {
  std::string path;
  lsn end = 0;
  lsn from = 0; // its log's first LSN
  std::vector<std::pair<tx_id, std::size_t>> records; // from `from` to end
  std::map<std::string, std::int64_t> values;
  std::string problem;
};

copy_view open_copy(const std::string& path, std::uint32_t p,
                    const std::vector<object_key>& keys) {
  copy_view v;
  v.path = path;
  partition_options o;
  o.index = p;
  o.path = path;
  o.must_exist = true;
  auto c = partition_core::open(o);
  if (!c) {
    v.problem = "open: " + c.err().to_string();
    return v;
  }
  auto& core = **c;
  v.end = core.log_end();
  v.from = core.log().truncation_lsn();
  auto all = core.records_from(v.from, 1u << 22);
  if (!all) {
    v.problem = "records: " + all.err().to_string();
    return v;
  }
  for (const auto& r : all->records)
    v.records.emplace_back(record_tx(r), r.index());
  const auto at = core.safe_time();
  for (const auto& k : keys) {
    if (*partition_for(k.bucket, k.key, cluster_partitions) != p)
      continue;
    auto got = core.read(k, crdt_type::counter, vector_clock{{local_dc, at}}, {});
    if (!got) {
      v.problem = "read " + k.key + ": " + got.err().to_string();
      return v;
    }
    v.values[k.key] = std::get<std::int64_t>(*got);
  }
  return v;
}

// The folder of node `dir`'s copy of partition p: partitions/<p> (an
// owner's) or replicas/<p>; "" with a reason when there is not exactly one.
std::string copy_folder(const std::string& dir, std::uint32_t p, std::string& why) {
  namespace fs = std::filesystem;
  const auto owned = dir + "/partitions/" + std::to_string(p);
  const auto replica = dir + "/replicas/" + std::to_string(p);
  const bool a = fs::exists(owned + "/data.mdb"), b = fs::exists(replica + "/data.mdb");
  if (a && b) {
    why = "both " + owned + " and " + replica;
    return "";
  }
  if (!a && !b) {
    why = "no copy of partition " + std::to_string(p) + " in " + dir;
    return "";
  }
  return a ? owned : replica;
}

void down_node_catches_up(std::chrono::seconds down) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    local_cluster cl{"batch"};
    BOOST_REQUIRE(start_three_copies(cl));
    BOOST_REQUIRE(cl.wait_serving({0, 1, 2}));
    const auto keys = [] {
      std::vector<object_key> out;
      for (int i = 0; i < 48; ++i)
        out.push_back(object_key{"down", "key" + std::to_string(i)});
      return out;
    }();
    const auto t0 = clock_type::now();
    std::atomic<bool> stop{false};
    std::vector<timed_record> recs(3);
    std::vector<std::thread> load;
    for (std::size_t n : {0u, 1u}) {
      const auto port = cl.nodes[n]->port;
      load.emplace_back(timed_load, [port] { return port; }, std::cref(keys), rng.gen(),
                        std::cref(stop), t0, std::ref(recs[n]));
    }
    // Under load before the kill: 200 writes acknowledged through each.
    for (auto deadline = clock_type::now() + std::chrono::seconds(30);
         clock_type::now() < deadline
         && (recs[0].acknowledged.load() < 200 || recs[1].acknowledged.load() < 200);)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Down: kill -9 of node 2, for `down` under load through the others.
    cl.nodes[2]->stop(SIGKILL);
    const double killed = seconds_since(t0, clock_type::now());
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(killed) + down);
    // Back: it restarts (on its data dir) and catches up while serving;
    // its own load starts once it accepts connections.
    BOOST_REQUIRE(cl.restart(2));
    const double back = seconds_since(t0, clock_type::now());
    std::atomic<std::uint16_t> port2{cl.nodes[2]->port};
    load.emplace_back(timed_load, [&port2] { return port2.load(); }, std::cref(keys), rng.gen(),
                      std::cref(stop), t0, std::ref(recs[2]));
    // Caught up: every partition has 3 current copies (its copies filled)
    // and a primary, as every node sees it.
    const bool settled = cl.wait_settled(std::chrono::seconds(60));
    const double caught_up = seconds_since(t0, clock_type::now());
    // Served through every node after the catch-up too.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    stop = true;
    for (auto& t : load)
      t.join();
    const double stopped = seconds_since(t0, clock_type::now());
    BOOST_REQUIRE_MESSAGE(settled, "no 3 current copies of every partition within 60 s of "
                                   "the restart: " << status_of(*cl.nodes[0]));
    BOOST_TEST_MESSAGE("down " << down.count() << " s: killed at " << killed << " s, back at "
                               << back << " s, caught up at " << caught_up << " s ("
                               << caught_up - back << " s after the restart), load stopped at "
                               << stopped << " s");
    // Service through the two other nodes, from 2 s after the kill.
    for (std::size_t n : {0u, 1u}) {
      const auto& r = recs[n];
      const auto acked = count_in(r.acks, killed + 2, stopped);
      const auto failed = count_in(r.fails, killed + 2, stopped);
      const double pause = longest_pause(r.acks, killed + 2, stopped);
      const double rejoin_pause = longest_pause(r.acks, back, stopped);
      BOOST_TEST_MESSAGE("through node " << n << ": " << r.acks.size() << " acknowledged, "
                         << r.fails.size() << " failed (" << failed << " of " << acked + failed
                         << " from 2 s after the kill); longest pause " << pause
                         << " s (while it rejoined: " << rejoin_pause << " s)"
                         << (r.first_failure.empty() ? "" : "; first failure: ")
                         << r.first_failure);
      BOOST_TEST(acked > 0u);
      BOOST_TEST(failed * 100 < acked + failed, "node " << n << ": " << failed << " failed");
      // 6 s under TSan (tests/support/latency_bounds.hpp)
      BOOST_TEST(pause < 2.0 * latency_bound_scale,
                 "node " << n << ": a pause of " << pause << " s");
    }
    // Service through the returning node once it serves.
    {
      const auto& r = recs[2];
      BOOST_REQUIRE_MESSAGE(!r.acks.empty(), "nothing served through the returning node: "
                                                 << r.first_failure);
      const double first = r.acks.front();
      const auto acked = r.acks.size();
      const auto failed = count_in(r.fails, first, stopped);
      BOOST_TEST_MESSAGE("through the returning node: first write acknowledged "
                         << first - back << " s after its restart; " << acked
                         << " acknowledged, " << r.fails.size() << " failed (" << failed
                         << " after its first); longest pause after it "
                         << longest_pause(r.acks, first, stopped) << " s"
                         << (r.first_failure.empty() ? "" : "; first failure: ")
                         << r.first_failure);
      BOOST_TEST(failed * 100 < acked + failed, "node 2: " << failed << " failed");
    }
    // Every copy's lag 0 once the load stopped.
    std::string last;
    bool level = false;
    for (auto deadline = clock_type::now() + std::chrono::seconds(30);
         clock_type::now() < deadline;) {
      last = status_of(*cl.nodes[0]);
      if ((level = every_copy_caught_up(last)))
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    BOOST_REQUIRE_MESSAGE(level, "copies still behind 30 s after the load stopped: " << last);
    // The same values through each node at one clock.
    std::map<std::string, std::int64_t> acked, attempted;
    std::vector<std::string> clocks;
    for (const auto& r : recs) {
      for (const auto& [k, v] : r.acked)
        acked[k] += v;
      for (const auto& [k, v] : r.attempted)
        attempted[k] += v;
      clocks.insert(clocks.end(), r.clocks.begin(), r.clocks.end());
    }
    const auto at = join_clocks(clocks);
    std::vector<std::int64_t> through0;
    for (std::size_t n = 0; n < 3; ++n) {
      auto c = connect_to(cl.nodes[n]->port);
      BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().to_string()));
      auto got = c->read(bound(keys), at);
      BOOST_REQUIRE_MESSAGE(got, "read through node " << n << ": "
                                                      << (got ? "" : got.err().to_string()));
      if (n == 0)
        through0 = got->values;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto v = got->values[i];
        BOOST_TEST(v >= acked[keys[i].key], "node " << n << " " << keys[i].key << ": " << v);
        BOOST_TEST(v <= attempted[keys[i].key], "node " << n << " " << keys[i].key << ": " << v);
        BOOST_TEST(v == through0[i], "node " << n << " " << keys[i].key);
      }
    }
    // The Bloom clock dependency checks ran on the real cluster: the
    // returning node's copies were probed behind their primaries and
    // refused those batches on the Bloom clock alone, then confirmed the
    // batches they caught up with; nothing contradicted a negative.
    dependency_counts total;
    for (std::size_t n = 0; n < 3; ++n) {
      const auto text = status_of(*cl.nodes[n]);
      const auto counts = parse_dependency_counts(text);
      BOOST_REQUIRE_MESSAGE(counts, "node " << n << ": no Bloom dependency counters in " << text);
      BOOST_TEST_MESSAGE("node " << n << ": " << describe(*counts));
      total += *counts;
      if (n == 2) {
        BOOST_TEST(counts->confirmed > 0u);
        BOOST_TEST(counts->saved > 0u, "the returning node: " << describe(*counts));
      }
    }
    BOOST_TEST(total.checks > 0u);
    BOOST_TEST(total.contradicted == 0u);
    BOOST_TEST(total.fp_commit_missing == 0u); // one history: no commit missed unseen
    // Freeze every node (no write between the copies' reads), kill them,
    // and compare every copy of every partition on disk.
    for (auto& node : cl.nodes)
      ::kill(node->pid, SIGSTOP);
    for (auto& node : cl.nodes)
      node->stop(SIGKILL);
    for (std::uint32_t p = 0; p < cluster_partitions; ++p) {
      std::vector<copy_view> copies;
      for (std::size_t n = 0; n < 3; ++n) {
        std::string why;
        auto folder = copy_folder(cl.dir_of(n), p, why);
        BOOST_REQUIRE_MESSAGE(!folder.empty(), why);
        copies.push_back(open_copy(folder, p, keys));
        BOOST_REQUIRE_MESSAGE(copies.back().problem.empty(),
                              folder << ": " << copies.back().problem);
      }
      for (std::size_t n = 1; n < 3; ++n) {
        const auto& a = copies[0];
        const auto& b = copies[n];
        BOOST_TEST(b.end == a.end, "partition " << p << ": journal end " << b.end << " in "
                                                << b.path << ", " << a.end << " in " << a.path);
        BOOST_TEST((b.values == a.values), "partition " << p << ": values differ between "
                                                        << a.path << " and " << b.path);
        // The records both logs still hold (each folds its own prefix).
        const lsn from = std::max(a.from, b.from);
        std::size_t differ = 0;
        for (lsn at_lsn = from; at_lsn < std::min(a.end, b.end); ++at_lsn) {
          const auto& x = a.records[at_lsn - a.from];
          const auto& y = b.records[at_lsn - b.from];
          differ += (x.first != y.first || x.second != y.second) ? 1 : 0;
        }
        BOOST_TEST(differ == 0u, "partition " << p << ": " << differ << " records differ between "
                                              << a.path << " and " << b.path);
      }
      // And the values are those read through the nodes.
      for (std::size_t i = 0; i < keys.size(); ++i) {
        auto it = copies[0].values.find(keys[i].key);
        if (it != copies[0].values.end())
          BOOST_TEST(it->second == through0[i], keys[i].key);
      }
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(down_node_tests)

// Issue 14's "Done when": 60 s down.
BOOST_AUTO_TEST_CASE(with_three_copies_a_node_down_60_s_under_load_catches_up_and_holds_the_same_data) {
  down_node_catches_up(std::chrono::seconds(60));
}

// The same in 10 s down, for a quick run by name (header comment).
BOOST_AUTO_TEST_CASE(with_three_copies_a_node_down_10_s_under_load_catches_up_and_holds_the_same_data,
                     *boost::unit_test::disabled()) {
  down_node_catches_up(std::chrono::seconds(10));
}

BOOST_AUTO_TEST_SUITE_END()
