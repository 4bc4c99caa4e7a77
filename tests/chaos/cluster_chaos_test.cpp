// The chaos suite on a cluster (issues 13 and 14; docs/RELIABILITY.md,
// "Cluster runs"): 3 and 5 real tallyd nodes on 127.0.0.1 with --n-val 3,
// node links through the link proxy, client sessions on every node (the
// workload of workload.hpp), and a nemesis that kills -9 and restarts a
// random node, pauses one with SIGSTOP, or cuts one off from the others
// (reset or blackhole), one fault at a time and two at once. The history
// is judged by the checkers of history.hpp (counter bounds and
// exactly-once, pair atomicity, monotonic reads and read-your-writes per
// session) and, once every fault is healed, every node must read the same
// values. Availability is measured: the share of requests that fail after
// the first 2 s of a single-node fault.
//
// Short mode (the default run): a fixed plan of a few faults per case;
// every safety checker and the final reads with and without a clock are
// held, availability is reported (docs/RELIABILITY.md, "Cluster runs").
// Long mode: TALLY_CHAOS_SECONDS=S runs random faults for S seconds per
// cluster and holds the run to issue 14's bar as well (fewer than 1% of
// the requests to the other nodes fail after the first 2 s of a
// single-node fault). TALLY_CHAOS_TLS=0 runs plain node links
// (--insecure-cluster-links) instead of links authenticated by a cluster
// secret. The seed is printed (TALLY_TEST_SEED replays the choices of
// operations, fault kinds and nodes; the timing is the machine's).
// Every wait is bounded; a request waits at most 10 s.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "ring/partition.hpp"
#include "tests/chaos/chaos_cluster.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::chaos;
using namespace tally::test;
using namespace std::chrono_literals;

namespace {

enum class fault_kind { kill, pause, cut_reset, cut_blackhole, kill_and_cut, pause_and_cut };

const char* name_of(fault_kind k) {
  switch (k) {
    case fault_kind::kill: return "kill";
    case fault_kind::pause: return "pause";
    case fault_kind::cut_reset: return "cut-reset";
    case fault_kind::cut_blackhole: return "cut-blackhole";
    case fault_kind::kill_and_cut: return "kill+cut";
    case fault_kind::pause_and_cut: return "pause+cut";
  }
  return "?";
}

struct run_options {
  std::size_t nodes = 3;
  int sessions_per_node = 2;
  std::vector<fault_kind> plan; // short mode: these faults in order
  std::vector<fault_kind> kinds; // long mode: picked from these (empty: every kind)
  double seconds = 0;           // long mode: random faults for this long
  std::chrono::milliseconds hold{3000}; // how long a fault lasts
  std::chrono::milliseconds gap{3000};  // between one fault's end and the next
  bool tls = true;
  bool hold_to_availability_bar = false; // issue 14: < 1% after the first 2 s
  // Every node serves reads at a clock within 60 s of the last fault (else
  // reported, and the keys no node served are not judged).
  bool require_final_reads = true;
  // Every node serves reads without a clock within 60 s of the last fault
  // (else: reported, after a 10 s probe).
  bool require_clockless_reads = true;
};

// Keys in bucket "chaos" on distinct partitions of the 8-partition ring:
// 4 counters, and 2 pairs whose two keys are on different partitions (so
// every pair transaction is a two-phase commit, most across nodes).
workload_keys spread_keys() {
  workload_keys k;
  std::set<std::uint32_t> used;
  auto pick = [&](const std::string& prefix) {
    for (int i = 0; i < 10000; ++i) {
      auto name = prefix + std::to_string(i);
      auto p = *partition_for("chaos", name, cluster_partitions);
      if (used.insert(p).second || used.size() >= cluster_partitions)
        return name;
    }
    return prefix;
  };
  for (int i = 0; i < 4; ++i)
    k.counters.push_back(pick("c"));
  for (int i = 0; i < 2; ++i) {
    auto x = pick("x");
    auto y = pick("y");
    k.pairs.emplace_back(x, y);
  }
  return k;
}

std::string text_of(const op_record& op, std::uint64_t t0) {
  std::ostringstream os;
  const char* kinds[] = {"inc", "pair", "pair-interactive", "read"};
  const char* results[] = {"ok", "failed", "unknown"};
  os << std::fixed;
  os.precision(3);
  os << double(op.invoke_ns - t0) / 1e9 << "-" << double(op.complete_ns - t0) / 1e9
     << " s  session " << op.session << "  " << kinds[int(op.kind)] << "  "
     << results[int(op.result)];
  for (std::size_t i = 0; i < op.keys.size(); ++i) {
    os << "  " << op.keys[i];
    if (op.kind == chaos::op_kind::read) {
      if (i < op.values.size())
        os << "=" << op.values[i];
    } else {
      os << "+" << op.delta;
    }
  }
  return os.str();
}

// The whole history as text, for a run with a violation: every operation
// with its session, times (seconds from the start of the load) and values,
// and the faults.
std::string dump_history(const session_log& all, const std::vector<fault_record>& faults,
                         std::uint64_t t0, std::uint64_t seed, std::size_t nodes) {
  auto path = (std::filesystem::temp_directory_path()
               / ("tally-chaos-" + std::to_string(nodes) + "-nodes-" + std::to_string(seed)
                  + "-pid" + std::to_string(::getpid()) + ".history"))
                .string();
  std::ofstream out{path};
  out << "TALLY_TEST_SEED=" << seed << ", " << nodes << " nodes\n";
  for (const auto& f : faults) {
    out << "fault " << f.kind << " nodes";
    for (int n : f.nodes)
      out << " " << n;
    out << "  " << double(f.start_ns - t0) / 1e9 << "-" << double(f.end_ns - t0) / 1e9 << " s\n";
  }
  auto ops = all.ops;
  std::sort(ops.begin(), ops.end(),
            [](const op_record& a, const op_record& b) { return a.invoke_ns < b.invoke_ns; });
  for (const auto& op : ops)
    out << text_of(op, t0) << "\n";
  // Every failed attempt (availability), with the node asked and why.
  out << std::fixed;
  out.precision(3);
  for (const auto& a : all.attempts)
    if (!a.ok)
      out << "failed attempt  node " << a.node << "  " << double(a.invoke_ns - t0) / 1e9 << "-"
          << double(a.complete_ns - t0) / 1e9 << " s  " << a.why << "\n";
  return path;
}

// The operations of the session of `at` around it (its own history: the
// 8 operations before and 2 after), as text.
std::string session_excerpt(const history& ops, const op_record* at, std::uint64_t t0) {
  std::vector<const op_record*> mine;
  std::size_t pos = 0;
  for (const auto& op : ops)
    if (op.session == at->session) {
      if (&op == at)
        pos = mine.size();
      mine.push_back(&op);
    }
  std::ostringstream os;
  for (std::size_t i = pos >= 8 ? pos - 8 : 0; i < mine.size() && i <= pos + 2; ++i)
    os << "\n    " << (i == pos ? "> " : "  ") << text_of(*mine[i], t0);
  return os.str();
}

std::string share(const availability_counts& c) {
  std::ostringstream os;
  os.precision(3);
  os << c.failed << " of " << c.total << " failed (" << 100.0 * c.failed_share() << "%)";
  return os.str();
}

void run_cluster_chaos(const run_options& o) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    const char* level = std::getenv("TALLY_CHAOS_LOG_LEVEL");
    chaos_cluster cl{o.nodes, o.tls, {}, level ? level : "info"};
    // The seed names the run; the process id keeps a rerun of the same
    // seed from overwriting a failed run's kept logs (it did in stop 31:
    // docs/RELIABILITY.md, "An open finding of stop 31").
    const auto run_name = "tally-chaos-" + std::to_string(o.nodes) + "-nodes-"
                          + std::to_string(rng.seed) + "-pid" + std::to_string(::getpid());
    std::string why;
    bool started = cl.start(why);
    if (started && !why.empty())
      BOOST_TEST_MESSAGE("a node start was retried: " << why);
    BOOST_REQUIRE_MESSAGE(started, why);
    // A kill during the handoffs that follow the joins is not what this
    // tests (docs/REPLICATION.md): wait until the ring has settled.
    BOOST_REQUIRE_MESSAGE(cl.wait_settled(90s), "the cluster did not settle: "
                                                  << status_of_dir(cl.dir_of(0))
                                                  << "; node logs: " << cl.keep_logs(run_name));
    const auto keys = spread_keys();
    {
      auto r = cl.read_finally(keys, 30s, false);
      BOOST_REQUIRE_MESSAGE(r.settled, "the cluster does not serve every key: " << r.why);
    }

    std::atomic<bool> stopping{false};
    const auto sessions = static_cast<int>(o.nodes) * o.sessions_per_node;
    std::vector<session_log> logs(std::size_t(sessions), session_log{});
    const auto t0 = now_ns();
    std::vector<std::thread> workers;
    for (int i = 0; i < sessions; ++i)
      workers.emplace_back([&, i] {
        logs[std::size_t(i)] = session_runner{i, rng.seed, cl.ports, keys, stopping}.run();
      });

    // The nemesis, on this thread.
    std::vector<fault_record> faults;
    std::map<std::string, int> count;
    int restarts_failed = 0;
    const auto end_of_run = steady::now() + std::chrono::duration_cast<steady::duration>(
                                              std::chrono::duration<double>(o.seconds));
    std::this_thread::sleep_for(2s); // the load runs before the first fault
    // Long mode, every kind: kills and pauses weigh twice (issue 14 counts
    // their cycles), partitions once each way, two faults at once once each.
    const std::vector<fault_kind> mix =
      !o.kinds.empty() ? o.kinds
                       : std::vector<fault_kind>{fault_kind::kill,          fault_kind::pause,
                                                 fault_kind::cut_reset,     fault_kind::cut_blackhole,
                                                 fault_kind::kill,          fault_kind::pause,
                                                 fault_kind::kill_and_cut,  fault_kind::pause_and_cut};
    auto random_kind = [&] { return mix[rng.uniform(0, mix.size() - 1)]; };
    for (std::size_t step = 0;; ++step) {
      fault_kind kind;
      if (!o.plan.empty()) {
        if (step >= o.plan.size())
          break;
        kind = o.plan[step];
      } else {
        if (steady::now() + o.hold + o.gap > end_of_run)
          break;
        kind = random_kind();
      }
      auto a = std::size_t(rng.uniform(0, o.nodes - 1));
      auto b = (a + 1 + std::size_t(rng.uniform(0, o.nodes - 2))) % o.nodes; // another node
      auto hold = o.plan.empty() ? o.hold + std::chrono::milliseconds(rng.uniform(0, 2000))
                                 : o.hold;
      fault_record f;
      f.kind = name_of(kind);
      f.start_ns = now_ns();
      switch (kind) {
        case fault_kind::kill:
        case fault_kind::kill_and_cut:
          f.nodes.push_back(int(a));
          cl.kill9(a);
          break;
        case fault_kind::pause:
        case fault_kind::pause_and_cut:
          f.nodes.push_back(int(a));
          cl.pause(a);
          break;
        case fault_kind::cut_reset:
          f.nodes.push_back(int(a));
          cl.proxy().isolate(int(a), cut_mode::reset);
          break;
        case fault_kind::cut_blackhole:
          f.nodes.push_back(int(a));
          cl.proxy().isolate(int(a), cut_mode::blackhole);
          break;
      }
      if (kind == fault_kind::kill_and_cut || kind == fault_kind::pause_and_cut) {
        f.nodes.push_back(int(b));
        cl.proxy().isolate(int(b), rng.chance(0.5) ? cut_mode::reset : cut_mode::blackhole);
      }
      std::this_thread::sleep_for(hold);
      // Undone in the order it was done.
      switch (kind) {
        case fault_kind::kill:
        case fault_kind::kill_and_cut:
          if (!cl.restart(a))
            ++restarts_failed;
          break;
        case fault_kind::pause:
        case fault_kind::pause_and_cut:
          cl.resume(a);
          break;
        default:
          cl.proxy().heal(int(a));
      }
      if (f.nodes.size() > 1)
        cl.proxy().heal(int(b));
      f.end_ns = now_ns();
      ++count[f.kind];
      faults.push_back(f);
      std::this_thread::sleep_for(o.gap);
    }
    // Nothing left broken: every node up, running and linked.
    cl.proxy().heal_all();
    for (std::size_t i = 0; i < o.nodes; ++i) {
      if (!cl.alive(i) && !cl.restart(i))
        ++restarts_failed;
      else
        cl.resume(i);
    }
    stopping = true;
    for (auto& t : workers)
      t.join();
    const auto load_seconds = double(now_ns() - t0) / 1e9;

    // The final values, at a clock that covers every acknowledged update
    // (safety is judged on them), then the same without a clock (liveness:
    // every node serves a client that sends none again).
    auto finals = cl.read_finally(keys, 60s, true);
    chaos_cluster::final_reads clockless;
    const auto clockless_start = steady::now();
    if (finals.settled)
      clockless = cl.read_finally(keys, o.require_clockless_reads ? 60s : 10s, false);
    const auto clockless_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                steady::now() - clockless_start).count();
    auto all = merge(logs);

    std::size_t ok = 0, unknown = 0, failed = 0, interactive_ok = 0, pairs_ok = 0;
    for (const auto& op : all.ops) {
      ok += op.result == chaos::outcome::ok;
      interactive_ok += op.result == chaos::outcome::ok && op.kind == chaos::op_kind::pair_interactive;
      pairs_ok += op.result == chaos::outcome::ok && op.kind == chaos::op_kind::pair;
      unknown += op.result == chaos::outcome::unknown;
      failed += op.result == chaos::outcome::failed;
    }
    std::ostringstream latency;
    for (auto kind : {chaos::op_kind::inc, chaos::op_kind::pair, chaos::op_kind::pair_interactive,
                      chaos::op_kind::read}) {
      std::vector<double> ms;
      for (const auto& op : all.ops)
        if (op.kind == kind && op.result == chaos::outcome::ok)
          ms.push_back(double(op.complete_ns - op.invoke_ns) / 1e6);
      std::sort(ms.begin(), ms.end());
      const char* names[] = {"inc", "pair", "interactive pair", "read"};
      if (!ms.empty())
        latency << (latency.tellp() > 0 ? ", " : "") << names[int(kind)] << " "
                << ms[ms.size() / 2] << "/" << ms[ms.size() * 99 / 100];
    }
    std::ostringstream faults_text;
    for (const auto& [k, n] : count)
      faults_text << (faults_text.tellp() > 0 ? ", " : "") << n << " " << k;
    auto av = measure_availability(all.attempts, faults, 2'000'000'000ULL, 5'000'000'000ULL);
    auto ps = cl.proxy().stats();
    BOOST_TEST_MESSAGE(
      o.nodes << " nodes, n_val 3, " << (o.tls ? "TLS" : "plain") << " node links, "
              << sessions << " sessions, " << load_seconds << " s of load, TALLY_TEST_SEED="
              << rng.seed << ": " << all.ops.size() << " operations (" << ok << " ok, "
              << unknown << " unknown, " << failed << " failed; " << pairs_ok
              << " static and " << interactive_ok << " interactive pairs ok); faults: "
              << faults_text.str() << "; " << all.attempts.size() << " requests: outside faults "
              << share(av.outside) << ", within 5 s after a fault " << share(av.recovery)
              << ", first 2 s of a single-node fault " << share(av.early)
              << ", after the first 2 s " << share(av.during) << ", to the faulted node "
              << share(av.faulted) << ", two nodes faulted " << share(av.multi)
              << "; proxy: " << ps.accepted << " links accepted, " << ps.refused
              << " refused (" << ps.unknown_origin << " of no known node, " << ps.opener_gone
              << " closed by their opener at once), " << ps.reset_by_cut
              << " reset and " << ps.frozen_by_cut << " frozen by cuts, slowest opener lookup "
              << ps.slowest_lookup_ms << " ms; ms p50/p99 of ok operations: "
              << latency.str());

    BOOST_TEST(restarts_failed == 0);
    BOOST_TEST(ok > 100u); // the load went on between the faults
    BOOST_TEST(interactive_ok > 0u);
    BOOST_TEST(ps.unknown_origin == 0u); // every node link was told apart
    // Every value a read at the final clock returned lies within its key's
    // bounds, through whichever node (a read at that clock sees every
    // acknowledged update); once settled, every node reads the same.
    std::vector<violation> found;
    std::set<std::string> judged;
    for (const auto& [n, values] : finals.by_node) {
      for (auto& v : check_counter_bounds(all.ops, values)) {
        v.detail = "through node " + std::to_string(n) + ": " + v.detail;
        found.push_back(v);
      }
      for (const auto& [k, v] : values)
        judged.insert(k);
    }
    if (finals.settled) {
      for (auto& v : check_convergence(finals.by_node))
        found.push_back(v);
    } else {
      // Liveness: some key was not served by some node within the limit.
      std::string unread;
      for (const auto& k : keys.all())
        if (!judged.count(k))
          unread += " " + k;
      BOOST_TEST_MESSAGE("after every fault was healed, reads at a clock were not served by "
                         "every node within 60 s: "
                         << finals.why << (unread.empty() ? "" : "; read through no node:" + unread)
                         << "; node logs: " << cl.keep_logs(run_name) << cl.statuses());
      if (o.require_final_reads)
        BOOST_ERROR("after every fault was healed, reads at a clock were not served by every "
                    "node within 60 s: "
                    << finals.why);
    }
    for (auto& v : check_pair_atomicity(all.ops, keys.pairs))
      found.push_back(v);
    for (auto& v : check_sessions(all.ops))
      found.push_back(v);
    if (finals.settled) {
      BOOST_TEST_MESSAGE("reads without a clock through every node after the faults: "
                         << (clockless.settled ? "served and agreeing after " : "NOT served within ")
                         << clockless_ms << " ms"
                         << (clockless.settled ? "" : ": " + clockless.why));
      if (o.require_clockless_reads && !clockless.settled)
        BOOST_ERROR("after every fault was healed, reads without a clock were not served by "
                    "every node within 60 s: "
                    << clockless.why << "; node logs: " << cl.keep_logs(run_name));
    }
    // The first violations, each with its session's history around the
    // read that showed it; the whole history goes to a file.
    for (std::size_t i = 0; i < found.size() && i < 10; ++i)
      BOOST_ERROR(found[i].checker << ": " << found[i].detail
                                   << (found[i].op ? session_excerpt(all.ops, found[i].op, t0)
                                                   : std::string()));
    if (found.size() > 10) {
      std::map<std::string, std::size_t> by_checker;
      for (const auto& v : found)
        ++by_checker[v.checker];
      std::ostringstream counts;
      for (const auto& [c, n] : by_checker)
        counts << " " << c << " " << n;
      BOOST_ERROR(found.size() << " violations in all:" << counts.str());
    }
    const bool availability_failed =
      o.hold_to_availability_bar && !(av.during.failed_share() < 0.01);
    if (!found.empty() || !finals.settled || availability_failed)
      BOOST_TEST_MESSAGE("the whole history: " << dump_history(all, faults, t0, rng.seed, o.nodes)
                                               << "; node logs: " << cl.keep_logs(run_name));
    BOOST_TEST(found.empty());
    // A commit that reached a partition which had aborted the transaction
    // (partition_core::stage_commit): atomicity broken on the nodes even if
    // no read showed it.
    // How often the participants decided a transaction without its
    // coordinator (docs/RELIABILITY.md, "The participant fence"): the
    // checkers above judged those outcomes too.
    BOOST_TEST_MESSAGE("participant fences: "
                       << cl.log_lines_with("fencing it at").size() << " rounds; "
                       << cl.log_lines_with("fenced at every participant").size()
                       << " transactions aborted behind fences, "
                       << cl.log_lines_with("at a participant asked to fence it").size()
                       << " decided from a participant's record");
    const auto splits = cl.log_lines_with("split decision");
    for (std::size_t i = 0; i < splits.size() && i < 5; ++i)
      BOOST_ERROR(splits[i]);
    BOOST_TEST(splits.empty());
    if (o.hold_to_availability_bar) {
      BOOST_TEST(av.during.total > 0u);
      BOOST_TEST(av.during.failed_share() < 0.01,
                 "after the first 2 s of single-node faults " << share(av.during));
    }
  }
}

double long_mode_seconds() {
  const char* s = std::getenv("TALLY_CHAOS_SECONDS");
  return s ? std::max(20.0, std::atof(s)) : 0.0;
}

bool tls_links() {
  const char* s = std::getenv("TALLY_CHAOS_TLS");
  return !(s && std::string(s) == "0");
}

// TALLY_CHAOS_FAULTS=kind,kind,...: the short mode's plan (in order), or
// the kinds the long mode picks from; kinds: kill, pause, cut-reset,
// cut-blackhole, kill+cut, pause+cut.
std::optional<std::vector<fault_kind>> faults_from_env() {
  const char* s = std::getenv("TALLY_CHAOS_FAULTS");
  if (!s || !*s)
    return std::nullopt;
  std::vector<fault_kind> out;
  std::istringstream in{s};
  for (std::string item; std::getline(in, item, ',');) {
    bool known = false;
    for (auto k : {fault_kind::kill, fault_kind::pause, fault_kind::cut_reset,
                   fault_kind::cut_blackhole, fault_kind::kill_and_cut, fault_kind::pause_and_cut})
      if (item == name_of(k)) {
        out.push_back(k);
        known = true;
      }
    BOOST_REQUIRE_MESSAGE(known, "TALLY_CHAOS_FAULTS: unknown fault kind '" << item << "'");
  }
  return out;
}

// What a test case runs: its short plan in the default run; in the long
// mode random faults of `long_kinds` (empty: every kind) for
// TALLY_CHAOS_SECONDS, held to issue 14's availability bar too.
// TALLY_CHAOS_FAULTS replaces either. Both modes hold every safety checker
// and the final reads with and without a clock (until issue 14's chaos
// fixes the short mode held only what the code then met; docs/RELIABILITY.md).
run_options options_for(std::size_t nodes, std::vector<fault_kind> short_plan,
                        std::vector<fault_kind> long_kinds) {
  run_options o;
  o.nodes = nodes;
  o.tls = tls_links();
  o.require_final_reads = true;
  o.require_clockless_reads = true;
  auto chosen = faults_from_env();
  if (auto s = long_mode_seconds(); s > 0) {
    o.seconds = s;
    o.hold_to_availability_bar = true;
    o.kinds = chosen ? *chosen : std::move(long_kinds);
  } else {
    o.plan = chosen ? *chosen : std::move(short_plan);
  }
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_chaos)

// In the default run: kill -9 and restart of a random node, three times,
// on 3 nodes. Every safety checker holds, and every node reads every key at
// a clock covering every acknowledged update, and reads the same, with and
// without a clock. Availability is measured and reported, held to issue
// 14's bar in the long mode only; docs/RELIABILITY.md, "Cluster runs".
BOOST_AUTO_TEST_CASE(three_nodes_under_kill_9) {
  run_cluster_chaos(options_for(3, {fault_kind::kill, fault_kind::kill, fault_kind::kill},
                                {fault_kind::kill}));
}

// The same on 5 nodes, with two kills in the default run (each case adds
// about a minute to it on a 2-core machine). It was disabled until issue
// 14's chaos fixes: a pair torn once in 25 kills and a partition left
// unserved with every node back (docs/RELIABILITY.md, findings 3 and 5).
BOOST_AUTO_TEST_CASE(five_nodes_under_kill_9) {
  run_cluster_chaos(options_for(5, {fault_kind::kill, fault_kind::kill},
                                {fault_kind::kill}));
}

// Every nemesis, one at a time and two at once. It was disabled until
// issue 14's chaos fixes: a SIGSTOP of a node, or cutting it off, lost
// writes acknowledged by the copies that took over its partitions
// meanwhile (the old primary led again when back; docs/RELIABILITY.md,
// finding 1).
BOOST_AUTO_TEST_CASE(three_nodes_under_every_nemesis) {
  run_cluster_chaos(options_for(3,
                                {fault_kind::kill, fault_kind::pause, fault_kind::cut_blackhole,
                                 fault_kind::cut_reset, fault_kind::kill_and_cut},
                                {}));
}

// On 5 nodes, three faults in the default run: a pause, a cut with reset,
// and a pause with a cut of another node (TALLY_CHAOS_FAULTS or the long
// mode run the others).
BOOST_AUTO_TEST_CASE(five_nodes_under_every_nemesis) {
  run_cluster_chaos(options_for(5,
                                {fault_kind::pause, fault_kind::cut_reset,
                                 fault_kind::pause_and_cut},
                                {}));
}

BOOST_AUTO_TEST_SUITE_END()
