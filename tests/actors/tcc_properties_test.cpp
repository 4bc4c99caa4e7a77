// Process-level TCC property tests: several concurrent clients (threads, each
// with its own socket) against one real tallyd, checking a recorded history.
//
// Worker threads make no Boost.Test call (Boost.Test is not thread-safe):
// each records what it saw and any violation as text; the test thread joins
// them and checks. Every test draws from a seeded_rng (seed printed; replay
// with TALLY_TEST_SEED=<seed>). Loops are bounded; there are no sleeps (the
// restart test waits on a condition variable with a deadline).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "clock/vector_clock.hpp"
#include "protocol/descriptor.hpp"
#include "protocol/messages.hpp"
#include "ring/partition.hpp"
#include "tests/actors/node_process_support.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;
using namespace tally::test;

namespace {

constexpr std::uint32_t node_partitions = 8; // server::start passes 8
const std::string bucket = "bucket";

bound_object ctr(const std::string& k) {
  return bound_object{object_key{bucket, k}, crdt_type::counter};
}

update_op inc(const std::string& k, std::int64_t d,
              std::optional<op_id> id = std::nullopt) {
  return update_op{ctr(k), counter_op{counter_update{d}, id}};
}

std::vector<update_op> inc_all(const std::vector<std::string>& keys,
                               std::int64_t d) {
  std::vector<update_op> ups;
  for (auto& k : keys)
    ups.push_back(inc(k, d));
  return ups;
}

/// `n` keys `prefix0, prefix1, ...` filtered so that each lies on a
/// different partition of an 8-partition node.
std::vector<std::string> spread_keys(const std::string& prefix, std::size_t n) {
  std::vector<std::string> keys;
  std::set<std::uint32_t> used;
  for (int i = 0; i < 1000 && keys.size() < n; ++i) {
    auto k = prefix + std::to_string(i);
    auto p = partition_for(bucket, k, node_partitions);
    if (p && used.insert(*p).second)
      keys.push_back(k);
  }
  return keys;
}

std::string describe(const response& r) {
  std::ostringstream os;
  if (auto* e = std::get_if<error_resp>(&r))
    os << "ErrorResp: " << e->err.to_string();
  else if (auto* c = std::get_if<commit_resp>(&r))
    os << "CommitResp success=" << c->success << " errorcode=" << c->error_code;
  else if (auto* o = std::get_if<operation_resp>(&r))
    os << "OperationResp success=" << o->success << " errorcode=" << o->error_code;
  else if (auto* s = std::get_if<start_transaction_resp>(&r))
    os << "StartTransactionResp success=" << s->success
       << " errorcode=" << s->error_code;
  else if (auto* ro = std::get_if<read_objects_resp>(&r))
    os << "ReadObjectsResp success=" << ro->success
       << " errorcode=" << ro->error_code;
  else if (auto* sr = std::get_if<static_read_objects_resp>(&r))
    os << "StaticReadObjectsResp success=" << sr->objects.success
       << " errorcode=" << sr->objects.error_code;
  return os.str();
}

/// The largest entry of a clock the server issued; nullopt for bytes that do
/// not decode.
std::optional<std::uint64_t> clock_time(const std::string& bytes) {
  auto c = decode_clock(bytes);
  if (!c)
    return std::nullopt;
  std::uint64_t t = 0;
  for (auto& e : c->entries())
    t = std::max(t, e.time);
  return t;
}

std::string later_clock(const std::string& a, const std::string& b) {
  if (a.empty())
    return b;
  if (b.empty())
    return a;
  return clock_time(b).value_or(0) > clock_time(a).value_or(0) ? b : a;
}

std::vector<std::int64_t> counters_of(const std::vector<crdt_value>& vs) {
  std::vector<std::int64_t> out;
  for (auto& v : vs)
    out.push_back(std::get<std::int64_t>(v));
  return out;
}

std::string show(const std::vector<std::int64_t>& vs) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < vs.size(); ++i)
    os << (i ? " " : "") << vs[i];
  os << ']';
  return os.str();
}

std::optional<std::string> opt_clock(const std::string& c) {
  if (c.empty())
    return std::nullopt;
  return c;
}

// ---- Transactions over a wire_client, without Boost.Test calls -----------
// Each returns nullopt and sets `err` on any failure.

std::optional<std::string> static_update(wire_client& c, std::vector<update_op> ups,
                                         const std::string& clock, std::string& err) {
  static_update_objects_req req;
  req.transaction.timestamp = opt_clock(clock);
  req.updates = std::move(ups);
  auto r = c.call(req);
  if (!r) {
    err = "static update: " + c.last_error;
    return std::nullopt;
  }
  auto* cr = std::get_if<commit_resp>(&*r);
  if (!cr || !cr->success) {
    err = "static update: " + describe(*r);
    return std::nullopt;
  }
  return cr->commit_time;
}

/// Start, the updates in two UpdateObjects requests (split at `split`),
/// commit.
std::optional<std::string> interactive_update(wire_client& c,
                                              std::vector<update_op> ups,
                                              std::size_t split,
                                              const std::string& clock,
                                              std::string& err) {
  auto st = c.call(start_transaction_req{opt_clock(clock)});
  if (!st) {
    err = "start: " + c.last_error;
    return std::nullopt;
  }
  auto* sr = std::get_if<start_transaction_resp>(&*st);
  if (!sr || !sr->success) {
    err = "start: " + describe(*st);
    return std::nullopt;
  }
  const auto desc = sr->transaction_descriptor;
  split = std::min(split, ups.size());
  std::vector<std::vector<update_op>> parts{
    {ups.begin(), ups.begin() + static_cast<std::ptrdiff_t>(split)},
    {ups.begin() + static_cast<std::ptrdiff_t>(split), ups.end()}};
  for (auto& part : parts) {
    if (part.empty())
      continue;
    auto u = c.call(update_objects_req{part, desc});
    if (!u) {
      err = "update: " + c.last_error;
      return std::nullopt;
    }
    auto* o = std::get_if<operation_resp>(&*u);
    if (!o || !o->success) {
      err = "update: " + describe(*u);
      c.call(abort_transaction_req{desc});
      return std::nullopt;
    }
  }
  auto cm = c.call(commit_transaction_req{desc});
  if (!cm) {
    err = "commit: " + c.last_error;
    return std::nullopt;
  }
  auto* cr = std::get_if<commit_resp>(&*cm);
  if (!cr || !cr->success) {
    err = "commit: " + describe(*cm);
    return std::nullopt;
  }
  return cr->commit_time;
}

struct read_result {
  std::vector<std::int64_t> values;
  std::string clock; // snapshot (static) or commit time (interactive)
};

std::optional<read_result> static_read(wire_client& c,
                                       const std::vector<std::string>& keys,
                                       const std::string& clock, std::string& err) {
  static_read_objects_req req;
  req.transaction.timestamp = opt_clock(clock);
  for (auto& k : keys)
    req.objects.push_back(ctr(k));
  auto r = c.call(req);
  if (!r) {
    err = "static read: " + c.last_error;
    return std::nullopt;
  }
  auto* s = std::get_if<static_read_objects_resp>(&*r);
  if (!s || !s->objects.success || s->objects.values.size() != keys.size()) {
    err = "static read: " + describe(*r);
    return std::nullopt;
  }
  return read_result{counters_of(s->objects.values), s->commit.commit_time};
}

/// Start, read the keys twice (one snapshot: both reads must agree), commit.
std::optional<read_result> interactive_read(wire_client& c,
                                            const std::vector<std::string>& keys,
                                            const std::string& clock,
                                            std::string& err) {
  auto st = c.call(start_transaction_req{opt_clock(clock)});
  if (!st) {
    err = "start: " + c.last_error;
    return std::nullopt;
  }
  auto* sr = std::get_if<start_transaction_resp>(&*st);
  if (!sr || !sr->success) {
    err = "start: " + describe(*st);
    return std::nullopt;
  }
  const auto desc = sr->transaction_descriptor;
  std::vector<bound_object> objs;
  for (auto& k : keys)
    objs.push_back(ctr(k));
  std::vector<std::vector<std::int64_t>> seen;
  for (int i = 0; i < 2; ++i) {
    auto r = c.call(read_objects_req{objs, desc});
    if (!r) {
      err = "read: " + c.last_error;
      return std::nullopt;
    }
    auto* ro = std::get_if<read_objects_resp>(&*r);
    if (!ro || !ro->success || ro->values.size() != keys.size()) {
      err = "read: " + describe(*r);
      c.call(abort_transaction_req{desc});
      return std::nullopt;
    }
    seen.push_back(counters_of(ro->values));
  }
  if (seen[0] != seen[1]) {
    err = "non-repeatable read in one transaction: " + show(seen[0]) + " then "
          + show(seen[1]);
    c.call(abort_transaction_req{desc});
    return std::nullopt;
  }
  auto cm = c.call(commit_transaction_req{desc});
  if (!cm) {
    err = "commit: " + c.last_error;
    return std::nullopt;
  }
  auto* cr = std::get_if<commit_resp>(&*cm);
  if (!cr || !cr->success) {
    err = "commit of a read-only transaction: " + describe(*cm);
    return std::nullopt;
  }
  return read_result{seen[0], cr->commit_time};
}

/// Two interactive transactions with the same updates (the same op ids)
/// open at once, their commits pipelined in one write. Returns how many
/// committed; `clock` is raised to their commit times.
int interleaved_copies(wire_client& c, const std::vector<update_op>& ups,
                       std::string& clock, std::string& err) {
  std::vector<std::string> descs;
  for (int k = 0; k < 2; ++k) {
    auto st = c.call(start_transaction_req{opt_clock(clock)});
    auto* sr = st ? std::get_if<start_transaction_resp>(&*st) : nullptr;
    if (!sr || !sr->success) {
      err = "start: " + (st ? describe(*st) : c.last_error);
      return 0;
    }
    descs.push_back(sr->transaction_descriptor);
  }
  for (auto& d : descs) {
    auto u = c.call(update_objects_req{ups, d});
    auto* o = u ? std::get_if<operation_resp>(&*u) : nullptr;
    if (!o || !o->success) {
      err = "update: " + (u ? describe(*u) : c.last_error);
      return 0;
    }
  }
  auto a = wire_client::bytes_of(commit_transaction_req{descs[0]});
  auto b = wire_client::bytes_of(commit_transaction_req{descs[1]});
  if (!a || !b || !c.send_raw(*a + *b)) {
    err = "pipelined commits: " + c.last_error;
    return 0;
  }
  int committed = 0;
  for (int k = 0; k < 2; ++k) {
    auto r = c.receive();
    if (!r) {
      err = "pipelined commits: " + c.last_error;
      break;
    }
    auto* cr = std::get_if<commit_resp>(&*r);
    if (cr && cr->success) {
      ++committed;
      clock = later_clock(clock, cr->commit_time);
    } else {
      err = "commit: " + describe(*r);
    }
  }
  return committed;
}

bool all_equal(const std::vector<std::int64_t>& vs) {
  return std::adjacent_find(vs.begin(), vs.end(), std::not_equal_to<>{})
         == vs.end();
}

/// What one worker thread recorded.
struct worker_log {
  std::vector<std::string> violations; // property failures (first 20)
  std::vector<std::string> errors;     // requests that failed (first 20)
  std::size_t violation_count = 0;
  std::size_t error_count = 0;
  std::int64_t attempted = 0; // sum of deltas sent
  std::int64_t acked = 0;     // sum of deltas acknowledged
  std::size_t commits = 0;
  std::size_t reads = 0;
  std::string last_clock;

  void violation(std::string what) {
    if (violations.size() < 20)
      violations.push_back(std::move(what));
    ++violation_count;
  }
  void error(std::string what) {
    if (errors.size() < 20)
      errors.push_back(std::move(what));
    ++error_count;
  }
};

/// Test thread: report every worker's findings.
void check_logs(const std::vector<worker_log>& logs) {
  for (std::size_t i = 0; i < logs.size(); ++i) {
    BOOST_TEST_INFO("worker " << i);
    BOOST_TEST(logs[i].violation_count == 0u);
    for (auto& v : logs[i].violations)
      BOOST_TEST_MESSAGE("worker " << i << " violation: " << v);
    BOOST_TEST_INFO("worker " << i);
    BOOST_TEST(logs[i].error_count == 0u);
    for (auto& e : logs[i].errors)
      BOOST_TEST_MESSAGE("worker " << i << " error: " << e);
  }
}

std::string max_clock(const std::vector<worker_log>& logs) {
  std::string c;
  for (auto& l : logs)
    c = later_clock(c, l.last_clock);
  return c;
}

std::vector<std::int64_t> read_final(std::uint16_t port,
                                     const std::vector<std::string>& keys,
                                     const std::string& clock) {
  wire_client c{port};
  std::string err;
  auto r = static_read(c, keys, clock, err);
  BOOST_REQUIRE_MESSAGE(r, "final read failed: " << err);
  return r->values;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tcc_properties)

// Writers always increment a group of keys on five partitions by the same
// delta (static updates, and interactive transactions whose updates arrive in
// two requests); readers read the group (static reads, and interactive
// transactions reading it twice) with and without a clock. Every read sees
// every key of the group equal.
BOOST_AUTO_TEST_CASE(no_fractured_reads_of_a_multi_partition_group) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir d;
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    const auto group = spread_keys("g", 5);
    BOOST_REQUIRE(group.size() == 5u);
    const int writers = 3, readers = 3, txs = 60, max_reads = 1000;
    std::vector<worker_log> logs(writers + readers);
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i < writers + readers; ++i)
      seeds.push_back(rng.uniform(0, UINT64_MAX));
    std::atomic<int> writers_left{writers};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
      threads.emplace_back([&, w] {
        auto& log = logs[static_cast<std::size_t>(w)];
        std::mt19937_64 gen{seeds[static_cast<std::size_t>(w)]};
        wire_client c{s.port};
        for (int i = 0; i < txs; ++i) {
          auto delta = static_cast<std::int64_t>(gen() % 9 + 1);
          log.attempted += delta;
          std::string err;
          auto ups = inc_all(group, delta);
          auto clock = gen() % 2 == 0
                         ? static_update(c, ups, log.last_clock, err)
                         : interactive_update(c, ups, gen() % (group.size() + 1),
                                              log.last_clock, err);
          if (!clock) {
            log.error(err);
            if (!c.connected())
              break;
            continue;
          }
          log.acked += delta;
          ++log.commits;
          log.last_clock = *clock;
        }
        --writers_left;
      });
    for (int r = 0; r < readers; ++r)
      threads.emplace_back([&, r] {
        auto idx = static_cast<std::size_t>(writers + r);
        auto& log = logs[idx];
        std::mt19937_64 gen{seeds[idx]};
        wire_client c{s.port};
        for (int i = 0; i < max_reads && writers_left.load() > 0; ++i) {
          std::string err;
          const std::string clock = gen() % 2 == 0 ? log.last_clock : "";
          auto res = gen() % 2 == 0 ? static_read(c, group, clock, err)
                                    : interactive_read(c, group, clock, err);
          if (!res) {
            if (err.rfind("non-repeatable", 0) == 0)
              log.violation(err);
            else
              log.error(err);
            if (!c.connected())
              break;
            continue;
          }
          ++log.reads;
          if (!all_equal(res->values))
            log.violation("fractured read " + show(res->values) + " of a group"
                          " written only together (read " + std::to_string(i)
                          + ")");
          log.last_clock = later_clock(log.last_clock, res->clock);
        }
      });
    for (auto& t : threads)
      t.join();
    check_logs(logs);
    std::int64_t acked = 0;
    std::size_t reads = 0, commits = 0;
    for (int w = 0; w < writers; ++w) {
      acked += logs[static_cast<std::size_t>(w)].acked;
      commits += logs[static_cast<std::size_t>(w)].commits;
    }
    for (int r = 0; r < readers; ++r)
      reads += logs[static_cast<std::size_t>(writers + r)].reads;
    BOOST_TEST_MESSAGE("commits acked: " << commits << ", reads: " << reads);
    auto final_values = read_final(s.port, group, max_clock(logs));
    for (auto v : final_values)
      BOOST_TEST(v == acked);
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

// Each writer owns a group of four keys on four partitions and, in the same
// transaction, increments a shared group on four partitions. Once a commit
// is acknowledged with clock c, a read at c shows it on every key: each key
// read on its own (separate snapshots) and the groups read together.
// An observer reads other writers' groups at the clocks they published.
BOOST_AUTO_TEST_CASE(acknowledged_multi_partition_commit_shows_on_every_key) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir d;
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    const int writers = 3, txs = 40, max_observations = 1000;
    std::vector<std::vector<std::string>> own;
    for (int w = 0; w < writers; ++w) {
      own.push_back(spread_keys("w" + std::to_string(w) + "-", 4));
      BOOST_REQUIRE(own.back().size() == 4u);
    }
    const auto shared = spread_keys("h", 4);
    BOOST_REQUIRE(shared.size() == 4u);
    std::vector<worker_log> logs(writers + 1);
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i <= writers; ++i)
      seeds.push_back(rng.uniform(0, UINT64_MAX));
    struct published {
      std::string clock;
      std::int64_t sum = 0;
    };
    std::mutex mu;
    std::vector<published> pub(writers);
    std::atomic<int> writers_left{writers};
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w)
      threads.emplace_back([&, w] {
        auto wi = static_cast<std::size_t>(w);
        auto& log = logs[wi];
        std::mt19937_64 gen{seeds[wi]};
        wire_client c{s.port};
        for (int i = 0; i < txs; ++i) {
          auto delta = static_cast<std::int64_t>(gen() % 9 + 1);
          auto ups = inc_all(own[wi], delta);
          for (auto& u : inc_all(shared, delta))
            ups.push_back(u);
          std::shuffle(ups.begin(), ups.end(), gen);
          log.attempted += delta;
          std::string err;
          auto clock = gen() % 2 == 0
                         ? static_update(c, ups, log.last_clock, err)
                         : interactive_update(c, ups, gen() % (ups.size() + 1),
                                              log.last_clock, err);
          if (!clock) {
            log.error(err);
            break; // the exact sums below assume every commit was acked
          }
          log.acked += delta;
          log.last_clock = *clock;
          {
            std::lock_guard<std::mutex> lock{mu};
            pub[wi] = {*clock, log.acked};
          }
          // Each own key on its own, at the commit clock: exactly our sum
          // (nobody else writes them).
          for (auto& k : own[wi]) {
            auto r = static_read(c, {k}, *clock, err);
            if (!r) {
              log.error(err);
              continue;
            }
            if (r->values[0] != log.acked)
              log.violation("after commit " + std::to_string(i) + " (sum "
                            + std::to_string(log.acked) + ") key " + k
                            + " read at the commit clock shows "
                            + std::to_string(r->values[0]));
          }
          // The shared group together: all equal, at least our sum.
          auto r = gen() % 2 == 0 ? static_read(c, shared, *clock, err)
                                  : interactive_read(c, shared, *clock, err);
          if (!r) {
            log.error(err);
            continue;
          }
          if (!all_equal(r->values) || r->values[0] < log.acked)
            log.violation("after commit " + std::to_string(i) + " (own sum "
                          + std::to_string(log.acked) + ") shared group at the"
                          " commit clock reads " + show(r->values));
        }
        --writers_left;
      });
    threads.emplace_back([&] {
      auto& log = logs[writers];
      std::mt19937_64 gen{seeds[writers]};
      wire_client c{s.port};
      for (int i = 0; i < max_observations && writers_left.load() > 0; ++i) {
        auto w = static_cast<std::size_t>(gen() % writers);
        published p;
        {
          std::lock_guard<std::mutex> lock{mu};
          p = pub[w];
        }
        std::string err;
        if (p.clock.empty()) { // nothing published yet: the group, no clock
          auto r = static_read(c, own[w], "", err);
          if (!r) {
            log.error(err);
            continue;
          }
          ++log.reads;
          if (!all_equal(r->values))
            log.violation("writer " + std::to_string(w) + "'s group reads "
                          + show(r->values));
          continue;
        }
        // One key (separate snapshot) or the whole group.
        if (gen() % 2 == 0) {
          auto& k = own[w][gen() % own[w].size()];
          auto r = static_read(c, {k}, p.clock, err);
          if (!r) {
            log.error(err);
            continue;
          }
          ++log.reads;
          if (r->values[0] < p.sum)
            log.violation("writer " + std::to_string(w) + " published sum "
                          + std::to_string(p.sum) + "; key " + k
                          + " at its clock reads " + std::to_string(r->values[0]));
        } else {
          auto r = gen() % 2 == 0 ? static_read(c, own[w], p.clock, err)
                                  : interactive_read(c, own[w], p.clock, err);
          if (!r) {
            (err.rfind("non-repeatable", 0) == 0 ? log.violation(err)
                                                 : log.error(err));
            continue;
          }
          ++log.reads;
          if (!all_equal(r->values) || r->values[0] < p.sum)
            log.violation("writer " + std::to_string(w) + " published sum "
                          + std::to_string(p.sum) + "; its group at its clock"
                          " reads " + show(r->values));
        }
      }
    });
    for (auto& t : threads)
      t.join();
    check_logs(logs);
    BOOST_TEST_MESSAGE("observer reads: " << logs[writers].reads);
    const auto clock = max_clock(logs);
    std::int64_t total = 0;
    for (int w = 0; w < writers; ++w) {
      auto wi = static_cast<std::size_t>(w);
      total += logs[wi].acked;
      for (auto v : read_final(s.port, own[wi], clock))
        BOOST_TEST(v == logs[wi].acked);
    }
    for (auto v : read_final(s.port, shared, clock))
      BOOST_TEST(v == total);
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

// Sessions that pass their last clock: a session's own increments are always
// visible to its next read (read-your-writes), shared increment-only counters
// never go down (monotonic reads), and the clocks the server returns to a
// session never go back.
BOOST_AUTO_TEST_CASE(sessions_read_their_writes_and_reads_are_monotonic) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir d;
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    const int sessions = 4, steps = 100;
    const auto shared = spread_keys("s", 3);
    BOOST_REQUIRE(shared.size() == 3u);
    std::vector<worker_log> logs(sessions);
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i < sessions; ++i)
      seeds.push_back(rng.uniform(0, UINT64_MAX));
    std::vector<std::thread> threads;
    for (int si = 0; si < sessions; ++si)
      threads.emplace_back([&, si] {
        auto idx = static_cast<std::size_t>(si);
        auto& log = logs[idx];
        std::mt19937_64 gen{seeds[idx]};
        wire_client c{s.port};
        const auto mine = spread_keys("p" + std::to_string(si) + "-", 2);
        std::vector<std::string> all = mine;
        all.insert(all.end(), shared.begin(), shared.end());
        std::int64_t my_sum = 0;                      // on each of `mine`
        std::vector<std::int64_t> my_shared(shared.size(), 0);
        std::vector<std::int64_t> seen_shared(shared.size(), 0);
        std::uint64_t last_time = 0;
        auto advance = [&](const std::string& clock, const char* what) {
          auto t = clock_time(clock);
          if (!t) {
            log.violation(std::string(what) + " returned a clock that does not"
                          " decode");
            return;
          }
          if (*t < last_time)
            log.violation(std::string(what) + " returned clock "
                          + std::to_string(*t) + " below the session's "
                          + std::to_string(last_time));
          else
            log.last_clock = clock;
          last_time = std::max(last_time, *t);
        };
        bool wrote = false;
        for (int i = 0; i < steps; ++i) {
          std::string err;
          // Right after a write, read half of the time (the RYW edge).
          const bool read = wrote ? gen() % 2 == 0 : gen() % 3 == 0;
          if (!read) {
            auto delta = static_cast<std::int64_t>(gen() % 5 + 1);
            auto ups = inc_all(mine, delta);
            std::vector<std::int64_t> add(shared.size(), 0);
            for (std::size_t k = 0; k < shared.size(); ++k)
              if (gen() % 2 == 0) {
                add[k] = delta;
                ups.push_back(inc(shared[k], delta));
              }
            const bool interactive = gen() % 2 == 0;
            auto clock = interactive
                           ? interactive_update(c, ups, gen() % (ups.size() + 1),
                                                log.last_clock, err)
                           : static_update(c, ups, log.last_clock, err);
            if (!clock) {
              log.error(err);
              break; // the exact sums below assume every commit was acked
            }
            my_sum += delta;
            for (std::size_t k = 0; k < shared.size(); ++k)
              my_shared[k] += add[k];
            ++log.commits;
            advance(*clock, interactive ? "interactive commit" : "static update");
            wrote = true;
            continue;
          }
          const bool interactive = gen() % 2 == 0;
          auto r = interactive ? interactive_read(c, all, log.last_clock, err)
                               : static_read(c, all, log.last_clock, err);
          if (!r) {
            (err.rfind("non-repeatable", 0) == 0 ? log.violation(err)
                                                 : log.error(err));
            break;
          }
          ++log.reads;
          wrote = false;
          const std::string kind = interactive ? "interactive" : "static";
          for (std::size_t k = 0; k < mine.size(); ++k)
            if (r->values[k] != my_sum)
              log.violation("read-your-writes: step " + std::to_string(i) + " "
                            + kind + " read of own key " + mine[k] + " = "
                            + std::to_string(r->values[k]) + ", own sum "
                            + std::to_string(my_sum));
          for (std::size_t k = 0; k < shared.size(); ++k) {
            auto v = r->values[mine.size() + k];
            if (v < my_shared[k])
              log.violation("read-your-writes: step " + std::to_string(i) + " "
                            + kind + " read of shared " + shared[k] + " = "
                            + std::to_string(v) + " below own contribution "
                            + std::to_string(my_shared[k]));
            if (v < seen_shared[k])
              log.violation("monotonic reads: step " + std::to_string(i) + " "
                            + kind + " read of shared " + shared[k] + " = "
                            + std::to_string(v) + " after "
                            + std::to_string(seen_shared[k]));
            seen_shared[k] = std::max(seen_shared[k], v);
          }
          if (!r->clock.empty())
            advance(r->clock, interactive ? "read-only commit" : "static read");
        }
        log.acked = log.attempted = my_sum;
      });
    for (auto& t : threads)
      t.join();
    check_logs(logs);
    std::size_t reads = 0, commits = 0;
    for (auto& l : logs) {
      reads += l.reads;
      commits += l.commits;
    }
    BOOST_TEST_MESSAGE("session commits: " << commits << ", reads: " << reads);
    BOOST_TEST(reads > 0u);
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

// Many clients increment the same counter (alone, or together with a second
// counter on another partition: two-phase), with static updates, interactive
// transactions and pipelined batches. Nothing aborts, and the final value
// is the sum of the acknowledged increments (acknowledged <= value <=
// attempted).
BOOST_AUTO_TEST_CASE(concurrent_increments_of_one_counter_never_abort) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir d;
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    const auto keys = spread_keys("hot", 2);
    BOOST_REQUIRE(keys.size() == 2u);
    const int clients = 6, rounds = 40;
    std::vector<worker_log> logs(clients);
    std::vector<std::int64_t> second(clients, 0); // acked on keys[1]
    std::vector<std::int64_t> second_attempted(clients, 0);
    std::vector<std::uint64_t> seeds;
    for (int i = 0; i < clients; ++i)
      seeds.push_back(rng.uniform(0, UINT64_MAX));
    std::vector<std::thread> threads;
    for (int ci = 0; ci < clients; ++ci)
      threads.emplace_back([&, ci] {
        auto idx = static_cast<std::size_t>(ci);
        auto& log = logs[idx];
        std::mt19937_64 gen{seeds[idx]};
        wire_client c{s.port};
        for (int i = 0; i < rounds && c.connected(); ++i) {
          auto delta = static_cast<std::int64_t>(gen() % 100 + 1);
          const bool both = gen() % 2 == 0;
          std::vector<update_op> ups{inc(keys[0], delta)};
          if (both)
            ups.push_back(inc(keys[1], delta));
          std::string err;
          switch (gen() % 3) {
          case 0:
          case 1: {
            log.attempted += delta;
            second_attempted[idx] += both ? delta : 0;
            auto clock = gen() % 2 == 0
                           ? static_update(c, ups, "", err)
                           : interactive_update(c, ups, 1, "", err);
            if (!clock) {
              log.error(err);
              continue;
            }
            log.acked += delta;
            second[idx] += both ? delta : 0;
            log.last_clock = later_clock(log.last_clock, *clock);
            break;
          }
          default: { // four pipelined static updates in one write
            static_update_objects_req req;
            req.updates = ups;
            std::string bytes;
            for (int k = 0; k < 4; ++k)
              bytes += *wire_client::bytes_of(req);
            log.attempted += 4 * delta;
            second_attempted[idx] += both ? 4 * delta : 0;
            if (!c.send_raw(bytes)) {
              log.error("pipelined send: " + c.last_error);
              continue;
            }
            for (int k = 0; k < 4; ++k) {
              auto r = c.receive();
              if (!r) {
                log.error("pipelined receive: " + c.last_error);
                break;
              }
              auto* cr = std::get_if<commit_resp>(&*r);
              if (!cr || !cr->success) {
                log.error("pipelined update: " + describe(*r));
                continue;
              }
              log.acked += delta;
              second[idx] += both ? delta : 0;
              log.last_clock = later_clock(log.last_clock, cr->commit_time);
            }
          }
          }
          ++log.commits;
        }
      });
    for (auto& t : threads)
      t.join();
    check_logs(logs); // any failed increment (an abort) is reported here
    std::int64_t acked = 0, attempted = 0, acked2 = 0, attempted2 = 0;
    for (std::size_t i = 0; i < logs.size(); ++i) {
      acked += logs[i].acked;
      attempted += logs[i].attempted;
      acked2 += second[i];
      attempted2 += second_attempted[i];
    }
    auto v = read_final(s.port, keys, max_clock(logs));
    BOOST_TEST_MESSAGE("hot counter: acked " << acked << ", attempted "
                                            << attempted << ", value " << v[0]);
    BOOST_TEST(acked <= v[0]);
    BOOST_TEST(v[0] <= attempted);
    BOOST_TEST(acked2 <= v[1]);
    BOOST_TEST(v[1] <= attempted2);
    // Nothing aborted (check_logs), so the bounds meet: the exact sums.
    BOOST_TEST(v[0] == acked);
    BOOST_TEST(v[1] == acked2);
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

// Exactly-once with retries: every update (op ids on every counter
// operation, several partitions) is sent twice with the same ids: one
// after the other (static or interactive), pipelined in one write (the
// second arrives while the first is in flight), or as two interactive
// transactions open at once whose commits are pipelined; some updates are
// first sent in a transaction that is aborted. In the middle
// tallyd gets SIGTERM and restarts on the same data dir: requests cut off are
// retried with the same ids until acknowledged, and worker 0 sends the
// second copy of one update only to the restarted node. Every key ends with
// exactly the sum of the intended deltas, and a late retry changes nothing.
void retries_apply_once_across_a_restart(int sig) {
  seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    temp_dir d;
    server s{d.path, "batch"};
    BOOST_REQUIRE(s.start());
    const int workers = 4, ops = 40, park_at = 10;
    const auto shared = spread_keys("xs", 2);
    BOOST_REQUIRE(shared.size() == 2u);
    std::vector<worker_log> logs(workers);
    std::vector<std::uint64_t> seeds, client_ids;
    for (int i = 0; i < workers; ++i) {
      seeds.push_back(rng.uniform(0, UINT64_MAX));
      client_ids.push_back(rng.uniform(1, UINT64_MAX));
    }
    std::vector<std::map<std::string, std::int64_t>> intended(workers);
    std::vector<std::vector<update_op>> last_ops(workers);
    std::vector<std::size_t> reconnects(workers, 0), retries(workers, 0);

    std::mutex mu;
    std::condition_variable cv;
    int generation = 0; // restarts done
    std::uint16_t port = s.port;
    int progress = 0;   // ops finished by workers 1..
    bool parked = false; // worker 0 waits for the restart
    constexpr auto patience = std::chrono::seconds(20);

    std::vector<std::thread> threads;
    for (int wi = 0; wi < workers; ++wi)
      threads.emplace_back([&, wi] {
        auto idx = static_cast<std::size_t>(wi);
        auto& log = logs[idx];
        std::mt19937_64 gen{seeds[idx]};
        int my_gen = 0;
        wire_client c{s.port};
        // After a cut connection: wait for a restart newer than the node we
        // talked to, then connect to it.
        auto reconnect = [&]() -> bool {
          std::unique_lock<std::mutex> lock{mu};
          if (!cv.wait_for(lock, patience, [&] { return generation > my_gen; }))
            return false;
          my_gen = generation;
          c = wire_client{port};
          ++reconnects[idx];
          return c.connected();
        };
        // Sends one copy (static or interactive) until acknowledged.
        auto send_copy = [&](const std::vector<update_op>& ups, bool interactive,
                             std::size_t split) -> bool {
          for (int attempt = 0; attempt < 8; ++attempt) {
            if (!c.connected() && !reconnect())
              return false;
            std::string err;
            auto clock = interactive
                           ? interactive_update(c, ups, split, log.last_clock, err)
                           : static_update(c, ups, log.last_clock, err);
            if (clock) {
              log.last_clock = later_clock(log.last_clock, *clock);
              return true;
            }
            ++retries[idx];
            if (err.find("stale") != std::string::npos
                || err.find("does not decode") != std::string::npos)
              log.last_clock.clear(); // keep going on the new node
          }
          return false;
        };
        const auto mine = spread_keys("x" + std::to_string(wi) + "-", 2);
        std::uint64_t seq = 0;
        for (int i = 0; i < ops; ++i) {
          auto delta = static_cast<std::int64_t>(gen() % 9 + 1);
          std::vector<update_op> ups;
          for (auto* group : {&mine, &shared})
            for (auto& k : *group) {
              ups.push_back(inc(k, delta, op_id{client_ids[idx], ++seq}));
              intended[idx][k] += delta;
            }
          std::shuffle(ups.begin(), ups.end(), gen);
          last_ops[idx] = ups;
          log.attempted += delta;
          const bool park = wi == 0 && i == park_at;
          const auto mode = gen() % (park ? 2 : 4); // parking: not pipelined
          const auto split = static_cast<std::size_t>(gen() % (ups.size() + 1));
          bool ok = true;
          if (gen() % 5 == 0 && c.connected()) {
            // A first attempt that aborts releases its ids: the copies
            // below still apply once.
            auto st = c.call(start_transaction_req{opt_clock(log.last_clock)});
            auto* sr = st ? std::get_if<start_transaction_resp>(&*st) : nullptr;
            if (sr && sr->success) {
              c.call(update_objects_req{ups, sr->transaction_descriptor});
              c.call(abort_transaction_req{sr->transaction_descriptor});
            }
          }
          if (mode == 2 && c.connected()) { // both copies pipelined
            static_update_objects_req req;
            req.transaction.timestamp = opt_clock(log.last_clock);
            req.updates = ups;
            auto one = *wire_client::bytes_of(req);
            int acked = 0;
            if (c.send_raw(one + one))
              for (int k = 0; k < 2; ++k) {
                auto r = c.receive();
                if (!r)
                  break;
                auto* cr = std::get_if<commit_resp>(&*r);
                if (cr && cr->success) {
                  ++acked;
                  log.last_clock = later_clock(log.last_clock, cr->commit_time);
                } else {
                  ++retries[idx];
                }
              }
            for (int k = acked; k < 2 && ok; ++k)
              ok = send_copy(ups, false, split);
          } else if (mode == 3 && c.connected()) { // two open at once
            std::string err;
            int acked = interleaved_copies(c, ups, log.last_clock, err);
            retries[idx] += static_cast<std::size_t>(2 - acked);
            for (int k = acked; k < 2 && ok; ++k)
              ok = send_copy(ups, false, split);
          } else {
            ok = send_copy(ups, mode == 1, split);
            if (ok && park) {
              // The second copy goes to the restarted node only.
              std::unique_lock<std::mutex> lock{mu};
              parked = true;
              cv.notify_all();
              ok = cv.wait_for(lock, patience, [&] { return generation > 0; });
              lock.unlock();
              c.close();
            }
            ok = ok && send_copy(ups, mode == 1, split);
          }
          if (!ok) {
            log.error("op " + std::to_string(i) + " never acknowledged: "
                      + c.last_error);
            break;
          }
          log.acked += delta;
          ++log.commits;
          if (wi != 0) {
            std::lock_guard<std::mutex> lock{mu};
            ++progress;
            cv.notify_all();
          }
        }
      });

    { // Restart once worker 0 is parked and the others are mid-way.
      std::unique_lock<std::mutex> lock{mu};
      bool ready = cv.wait_for(lock, patience, [&] {
        return parked && progress >= (workers - 1) * ops / 3;
      });
      BOOST_TEST(ready);
      BOOST_TEST_MESSAGE((sig == SIGTERM ? "SIGTERM" : "SIGKILL")
                         << " after " << progress << " ops of workers 1.."
                                          << workers - 1);
    }
    const int status = s.stop(sig);
    if (sig == SIGTERM)
      BOOST_TEST(status == 0);
    bool restarted = s.start();
    BOOST_TEST(restarted);
    if (restarted) {
      // Before any retry: every group written only together reads equal
      // (a commit cut by the stop is all there or not at all).
      std::vector<std::string> keys = shared;
      for (int wi = 0; wi < workers; ++wi)
        for (auto& k : spread_keys("x" + std::to_string(wi) + "-", 2))
          keys.push_back(k);
      wire_client c{s.port};
      std::string err;
      auto r = static_read(c, keys, "", err);
      BOOST_TEST_REQUIRE(r.has_value(), "read after the restart: " << err);
      BOOST_TEST_MESSAGE("after the restart: " << show(r->values));
      for (std::size_t i = 0; i + 1 < keys.size(); i += 2) {
        BOOST_TEST_INFO("keys " << keys[i] << ", " << keys[i + 1]);
        BOOST_TEST(r->values[i] == r->values[i + 1]);
      }
    }
    {
      std::lock_guard<std::mutex> lock{mu};
      port = s.port;
      ++generation;
    }
    cv.notify_all();
    for (auto& t : threads)
      t.join();
    BOOST_REQUIRE(restarted);
    check_logs(logs);
    for (int wi = 0; wi < workers; ++wi) {
      auto idx = static_cast<std::size_t>(wi);
      BOOST_TEST_MESSAGE("worker " << wi << ": " << logs[idx].commits
                                   << " ops acked, " << retries[idx]
                                   << " failed attempts retried, "
                                   << reconnects[idx] << " reconnects");
    }
    BOOST_TEST(reconnects[0] == 1u); // worker 0 crossed the restart

    std::map<std::string, std::int64_t> expected;
    for (auto& m : intended)
      for (auto& [k, v] : m)
        expected[k] += v;
    std::vector<std::string> keys;
    for (auto& [k, v] : expected)
      keys.push_back(k);
    auto check = [&](const std::string& clock, const char* when) {
      auto values = read_final(s.port, keys, clock);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        BOOST_TEST_INFO(when << ": key " << keys[i]);
        BOOST_TEST(values[i] == expected[keys[i]]);
      }
    };
    const auto clock = max_clock(logs);
    check(clock, "after the run");
    // A late retry of every worker's last update: acknowledged, not applied.
    wire_client c{s.port};
    std::string last = clock;
    for (auto& ups : last_ops) {
      std::string err;
      auto cl = static_update(c, ups, last, err);
      BOOST_TEST_REQUIRE(cl.has_value(), "late retry failed: " << err);
      last = *cl;
    }
    check(last, "after late retries");
    BOOST_TEST(s.stop(SIGTERM) == 0);
  }
}

BOOST_AUTO_TEST_CASE(retries_with_the_same_op_id_apply_once_across_a_sigterm_restart) {
  retries_apply_once_across_a_restart(SIGTERM);
}

// The same with kill -9 (batch durability: acknowledged commits are synced).
BOOST_AUTO_TEST_CASE(retries_with_the_same_op_id_apply_once_across_a_kill_9_restart) {
  retries_apply_once_across_a_restart(SIGKILL);
}

BOOST_AUTO_TEST_SUITE_END()
