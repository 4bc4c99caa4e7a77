// tally-cache-bench: in-process throughput of the partition's object cache
// (cache/object_cache.hpp). One fixed-format line per workload: median,
// min and max over the runs (bench/bench_harness.hpp).
//
//   read_latest          stable read at a snapshot >= the latest commit: the
//                        eagerly materialized version, no replay
//   read_replay_k{1,10,100}  stable read at an older snapshot that replays k
//                        committed effects from the base
//   read_interactive     read_latest plus 2 own uncommitted effects
//   read_miss_load       a miss, load() from an in-memory source, then read
//   on_commit_cached     eager on_commit of a key that is cached
//   on_commit_uncached   on_commit of a key that is not cached (no-op)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_harness.hpp"
#include "cache/object_cache.hpp"

using namespace tally;

namespace {

struct options {
  std::uint64_t seed = 42;
  int runs = 5;
  std::uint64_t iters = 1'000'000;
  std::size_t keys = 10'000;
  std::string only; // empty: every workload
};

void usage(const char* argv0) {
  std::printf(
    "usage: %s [--seed N] [--runs N] [--iters N] [--keys N] [--workload NAME]\n"
    "\n"
    "In-process throughput of the object cache (docs/CACHE.md).\n"
    "  --seed N       seed of the key sequences and effect deltas (default 42)\n"
    "  --runs N       timed runs per workload; the median is reported (5)\n"
    "  --iters N      operations per run (1000000; read_replay_k100 and the\n"
    "                 load workload use iters/10, on_commit_cached iters/5)\n"
    "  --keys N       distinct keys, all cached unless stated (10000)\n"
    "  --workload W   run only W: read_latest, read_replay_k1, read_replay_k10,\n"
    "                 read_replay_k100, read_interactive, read_miss_load,\n"
    "                 on_commit_cached, on_commit_uncached\n",
    argv0);
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    auto arg = std::string{argv[i]};
    if (arg == "--help" || arg == "-h") {
      usage(argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value (see --help)\n", arg.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (bench::take_common_option(arg, v, o))
      continue;
    if (arg == "--iters")
      o.iters = std::max<std::uint64_t>(1, std::strtoull(v, nullptr, 10));
    else if (arg == "--keys")
      o.keys = std::max<std::size_t>(1, std::strtoull(v, nullptr, 10));
    else {
      std::fprintf(stderr, "unknown option %s (see --help)\n", arg.c_str());
      return false;
    }
  }
  return true;
}

std::vector<object_key> make_keys(std::size_t n) {
  std::vector<object_key> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    keys.push_back(object_key{"bench", "key-" + std::to_string(i)});
  return keys;
}

// A pre-drawn random key sequence, so the timed loop does no RNG work.
// 2^16 indexes: far more than the branch predictor can learn.
std::vector<std::uint32_t> key_sequence(std::uint64_t seed, std::size_t keys) {
  std::mt19937_64 gen{seed};
  std::uniform_int_distribution<std::uint32_t> pick{
    0, static_cast<std::uint32_t>(keys - 1)};
  std::vector<std::uint32_t> seq(std::size_t{1} << 16);
  for (auto& s : seq)
    s = pick(gen);
  return seq;
}

committed_effect effect_at(lsn pos, std::uint64_t time, std::int64_t delta) {
  committed_effect e;
  e.position = pos;
  e.tx = tx_id{1, pos};
  e.commit_time = vector_clock{{1, time}};
  e.effect = counter_effect{delta};
  return e;
}

// A cache holding every key with `effects` effects at commit times
// {1:1}..{1:effects}. Every key fits in the head segment, so reads never
// promote or evict: these workloads measure the hit path alone.
object_cache filled_cache(const std::vector<object_key>& keys,
                          std::uint64_t effects) {
  auto c = object_cache::make({4, keys.size()});
  if (!c) {
    std::fprintf(stderr, "%s\n", c.err().to_string().c_str());
    std::exit(1);
  }
  for (const auto& k : keys) {
    entry_image image;
    for (std::uint64_t t = 1; t <= effects; ++t)
      image.effects.push_back(effect_at(t, t, 1));
    if (auto st = c->load(k, crdt_type::counter, std::move(image)); !st) {
      std::fprintf(stderr, "%s\n", st.err().to_string().c_str());
      std::exit(1);
    }
  }
  return std::move(*c);
}

void report(const std::string& name, const std::vector<double>& ns, int runs) {
  auto s = bench::summarize(ns);
  bench::print_line(name, s, runs);
  std::printf("%-40s %10.2f M ops/s\n", (name + " (throughput)").c_str(),
              1e3 / s.median);
}

// Like bench::time_runs, with an untimed `setup` before each run (a fresh
// cache for workloads that grow it).
std::vector<double> timed_runs(int runs, std::uint64_t iters,
                               const std::function<void()>& setup,
                               const std::function<void(std::uint64_t)>& body) {
  using clock = std::chrono::steady_clock;
  std::vector<double> ns;
  setup();
  body(std::max<std::uint64_t>(iters / 10, 1)); // warm-up
  for (int r = 0; r < runs; ++r) {
    setup();
    auto t0 = clock::now();
    body(iters);
    auto t1 = clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count()
                 / static_cast<double>(iters));
  }
  return ns;
}

void fail(const error& e) {
  std::fprintf(stderr, "unexpected error: %s\n", e.to_string().c_str());
  std::exit(1);
}

// Reads of random keys at `snapshot`, with `own` effects (empty: stable).
void bench_reads(const std::string& name, const options& o,
                 std::uint64_t effects_per_key, const vector_clock& snapshot,
                 const std::vector<crdt_effect>& own, std::uint64_t iters) {
  auto keys = make_keys(o.keys);
  auto cache = filled_cache(keys, effects_per_key);
  auto seq = key_sequence(o.seed, keys.size());
  auto ns = bench::time_runs(o.runs, iters, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto& k = keys[seq[i & (seq.size() - 1)]];
      auto v = own.empty()
                 ? cache.read(k, crdt_type::counter, snapshot)
                 : cache.read_interactive(k, crdt_type::counter, snapshot, own);
      if (!v || !*v)
        fail(v ? make_error(errc::not_found, "miss") : v.err());
      bench::do_not_optimize(**v);
    }
  });
  report(name, ns, o.runs);
}

struct map_source final : entry_source {
  std::uint64_t effects = 4;
  expected<entry_image> fetch(const object_key&, crdt_type) override {
    entry_image image;
    for (std::uint64_t t = 1; t <= effects; ++t)
      image.effects.push_back(effect_at(t, t, 1));
    return image;
  }
};

void bench_miss_load(const options& o) {
  auto keys = make_keys(o.keys);
  // 4 x (keys/64) entries: ~1/16 of the keys fit, so most reads miss.
  auto c = object_cache::make({4, std::max<std::size_t>(1, keys.size() / 64)});
  if (!c)
    fail(c.err());
  auto seq = key_sequence(o.seed, keys.size());
  map_source source;
  vector_clock snapshot{{1, 100}};
  std::uint64_t iters = std::max<std::uint64_t>(1, o.iters / 10);
  auto ns = bench::time_runs(o.runs, iters, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto& k = keys[seq[i & (seq.size() - 1)]];
      auto v = c->read_or_load(k, crdt_type::counter, snapshot, {}, source);
      if (!v)
        fail(v.err());
      bench::do_not_optimize(*v);
    }
  });
  report("read_miss_load", ns, o.runs);
  auto s = c->stats();
  std::printf("%-40s %10.3f\n", "read_miss_load (miss ratio)",
              static_cast<double>(s.misses)
                / static_cast<double>(s.misses + s.hits));
}

void bench_on_commit(const options& o, bool cached) {
  auto keys = make_keys(o.keys);
  auto seq = key_sequence(o.seed ^ 0x5eed, keys.size());
  std::mt19937_64 gen{o.seed};
  std::vector<std::int64_t> deltas(seq.size());
  for (auto& d : deltas)
    d = static_cast<std::int64_t>(gen() % 201) - 100;
  std::uint64_t iters =
    cached ? std::max<std::uint64_t>(1, o.iters / 5) : o.iters;
  std::optional<object_cache> cache;
  // The effects are built outside the timed loop: the bench measures the
  // cache, not the construction of a commit clock.
  std::vector<committed_effect> effects;
  effects.reserve(iters);
  for (std::uint64_t i = 0; i < iters; ++i)
    effects.push_back(effect_at(1000 + i, 1000 + i, deltas[i & (deltas.size() - 1)]));
  auto setup = [&] {
    if (cached) {
      cache.reset();
      cache.emplace(filled_cache(keys, 4));
    } else if (!cache) {
      auto c = object_cache::make({4, 16});
      if (!c)
        fail(c.err());
      cache.emplace(std::move(*c));
    }
  };
  auto ns = timed_runs(o.runs, iters, setup, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto& k = keys[seq[i & (seq.size() - 1)]];
      if (auto st = cache->on_commit(k, crdt_type::counter, effects[i]); !st)
        fail(st.err());
    }
  });
  report(cached ? "on_commit_cached" : "on_commit_uncached", ns, o.runs);
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o))
    return 2;
  bench::warn_if_unoptimized();
  std::printf("# tally-cache-bench seed=%llu runs=%d iters=%llu keys=%zu build=%s\n",
              static_cast<unsigned long long>(o.seed), o.runs,
              static_cast<unsigned long long>(o.iters), o.keys,
              TALLY_BUILD_TYPE);
  auto want = [&](const char* name) { return o.only.empty() || o.only == name; };
  // Every key holds 4 effects at {1:1}..{1:4}; {1:4} is the latest.
  if (want("read_latest"))
    bench_reads("read_latest", o, 4, {{1, 4}}, {}, o.iters);
  // k + 8 effects at {1:1}..{1:k+8}; a read at {1:k} replays k of them and
  // stops at the first later one (commit order is by clock sum).
  for (std::uint64_t k : {1u, 10u, 100u}) {
    auto name = "read_replay_k" + std::to_string(k);
    if (want(name.c_str()))
      bench_reads(name, o, k + 8, {{1, k}}, {},
                  k == 100 ? std::max<std::uint64_t>(1, o.iters / 10) : o.iters);
  }
  if (want("read_interactive"))
    bench_reads("read_interactive", o, 4, {{1, 4}},
                {counter_effect{1}, counter_effect{2}}, o.iters);
  if (want("read_miss_load"))
    bench_miss_load(o);
  if (want("on_commit_cached"))
    bench_on_commit(o, true);
  if (want("on_commit_uncached"))
    bench_on_commit(o, false);
  return 0;
}
