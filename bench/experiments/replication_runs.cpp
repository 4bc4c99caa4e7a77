#include "bench/experiments/replication_runs.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "client/client.hpp"
#include "ring/partition.hpp"

namespace tally::experiments {

namespace {

using steady = std::chrono::steady_clock;

struct worker_tally {
  std::uint64_t acknowledged = 0;
  std::uint64_t failed = 0;
};

// Writes until `stop`: increments of one key, or (a share of
// `two_partition_share`) of two keys of two partitions in one transaction,
// through node `first` mod n, or the next node that is up when a write
// through it fails.
void write_load(const tallyd_cluster& cluster, const std::vector<std::atomic<bool>>& up,
                const std::vector<object_key>& keys, std::uint32_t partitions,
                double two_partition_share, std::size_t first, std::uint64_t seed,
                const std::atomic<bool>& stop, worker_tally& out) {
  std::mt19937_64 gen{seed};
  std::uniform_real_distribution<double> unit{0.0, 1.0};
  const std::size_t n = cluster.size();
  std::size_t node = first % n;
  std::optional<client> c;
  while (!stop.load()) {
    if (!c) {
      for (std::size_t step = 0; step < n && !up[node].load(); ++step)
        node = (node + 1) % n;
      client_options o;
      o.port = cluster.port(node);
      o.timeout = std::chrono::milliseconds{1000};
      auto fresh = client::connect(o);
      if (!fresh) {
        ++out.failed;
        node = (node + 1) % n;
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
        continue;
      }
      c.emplace(std::move(*fresh));
    }
    std::vector<counter_inc> ups;
    const auto& a = keys[gen() % keys.size()];
    ups.push_back(counter_inc{a, 1});
    if (unit(gen) < two_partition_share) {
      const auto pa = partition_for(a.bucket, a.key, partitions);
      for (int tries = 0; tries < 64; ++tries) {
        const auto& b = keys[gen() % keys.size()];
        const auto pb = partition_for(b.bucket, b.key, partitions);
        if (pa && pb && *pb != *pa) {
          ups.push_back(counter_inc{b, 1});
          break;
        }
      }
    }
    if (c->update(ups)) {
      ++out.acknowledged;
    } else {
      ++out.failed;
      c.reset();
      node = (node + 1) % n;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
  }
}

// Node i's counters from its status; errc::unavailable when its status has
// none (not replicated, or not answering).
expected<dependency_counts> counts_of(const tallyd_cluster& cluster, std::size_t i) {
  const auto text = cluster.status_text(i);
  auto c = parse_dependency_counts(text);
  if (!c)
    return make_error(errc::unavailable, "node " + std::to_string(i)
                                             + "'s status has no Bloom dependency counters: "
                                             + text);
  return *c;
}

} // namespace

expected<bloom_replication_result> run_replication_checks(const bloom_replication_params& p) {
  auto started = tallyd_cluster::start(p.cluster);
  if (!started)
    return started.err();
  tallyd_cluster& cluster = *started;
  const std::size_t n = cluster.size();
  std::vector<object_key> keys;
  for (int i = 0; i < 64; ++i)
    keys.push_back(object_key{"bloom-replication", "k" + std::to_string(i)});
  std::vector<std::atomic<bool>> up(n);
  for (auto& u : up)
    u = true;
  std::vector<std::uint32_t> runs(n, 0);
  bloom_replication_result r;
  std::atomic<bool> stop{false};
  std::vector<worker_tally> tallies(p.workers);
  std::vector<std::thread> workers;
  const auto t0 = steady::now();
  for (std::uint32_t w = 0; w < p.workers; ++w)
    workers.emplace_back(write_load, std::cref(cluster), std::cref(up), std::cref(keys),
                         p.cluster.partitions, p.two_partition_share, w, p.seed * 1000 + w,
                         std::cref(stop), std::ref(tallies[w]));
  auto finish = [&](status st) -> status {
    stop = true;
    for (auto& t : workers)
      t.join();
    workers.clear();
    return st;
  };
  std::this_thread::sleep_for(p.between);
  for (std::uint32_t k = 0; k < p.kills; ++k) {
    const std::size_t victim = k % n;
    auto before = counts_of(cluster, victim);
    if (!before)
      return finish(before.err()).err();
    up[victim] = false;
    cluster.kill(victim);
    r.runs.push_back(node_run_counts{victim, runs[victim], true, *before});
    ++runs[victim];
    std::this_thread::sleep_for(p.down);
    const auto back = steady::now();
    if (auto st = cluster.restart(victim); !st)
      return finish(st).err();
    up[victim] = true;
    if (auto st = cluster.settle(std::chrono::milliseconds{60'000}); !st)
      return finish(st).err();
    r.catch_up_s.push_back(std::chrono::duration<double>(steady::now() - back).count());
    std::this_thread::sleep_for(p.between);
  }
  (void)finish({});
  r.load_s = std::chrono::duration<double>(steady::now() - t0).count();
  for (const auto& t : tallies) {
    r.acknowledged += t.acknowledged;
    r.failed += t.failed;
  }
  // The copies finish what the load left in flight before the last read.
  if (auto st = cluster.settle(std::chrono::milliseconds{30'000}); !st)
    return st.err();
  for (std::size_t i = 0; i < n; ++i) {
    auto c = counts_of(cluster, i);
    if (!c)
      return c.err();
    r.runs.push_back(node_run_counts{i, runs[i], false, *c});
  }
  for (const auto& run : r.runs)
    r.total += run.counts;
  return r;
}

} // namespace tally::experiments
