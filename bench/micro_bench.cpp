// tally-micro: nanoseconds per operation of the core structures (FBF, Bloom
// clock, vector clock, ring), and Equation 3 of the FBF paper against the
// measured false-positive rate. Results: docs/PERFORMANCE.md.
//
//   tally-micro [--runs N] [--seed S] [--only fbf|clock|ring|model]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_harness.hpp"
#include "clock/bloom_clock.hpp"
#include "clock/vector_clock.hpp"
#include "fbf/forgetful_bloom_filter.hpp"
#include "ring/ring_state.hpp"


using namespace tally;
using namespace std::chrono_literals;

namespace {

struct options {
  int runs = 7;
  std::uint64_t seed = 42;
  std::string only;
};

void usage() {
  std::puts(
    "usage: tally-micro [--runs N] [--seed S] [--only fbf|clock|ring|model]\n"
    "\n"
    "Prints ns/op (median, min and max over --runs runs, default 7) of:\n"
    "  fbf    FBF insert and membership check at m = 2^20 bits, k = 7\n"
    "  clock  Bloom clock tick, merge and compare; vector clock merge/compare\n"
    "  ring   key -> partition -> preference list lookup\n"
    "  model  FBF Equation 3 against the false-positive rate measured with\n"
    "         200k absent probes\n"
    "Build in Release: numbers from other builds are meaningless.");
}

std::vector<std::uint64_t> random_hashes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint64_t> v(n);
  for (auto& x : v)
    x = rng();
  return v;
}

forgetful_bloom_filter make_fbf(std::uint64_t m, unsigned k, std::size_t past) {
  fbf_config cfg;
  cfg.bits_per_filter = m;
  cfg.hashes = k;
  cfg.past_filters = past;
  cfg.refresh_period = 5s;
  cfg.retry_timeout = 1s;
  auto f = forgetful_bloom_filter::make(cfg);
  if (!f) {
    std::fprintf(stderr, "%s\n", f.err().to_string().c_str());
    std::exit(1);
  }
  return std::move(*f);
}

void bench_fbf(const options& opt) {
  constexpr std::uint64_t m = std::uint64_t{1} << 20;
  constexpr unsigned k = 7;
  std::mt19937_64 rng{opt.seed};
  // Baseline measured in the same run: one plain Bloom filter of the same
  // geometry holding 50k elements (checked before the insert runs fill it). The FBF lines below are also printed as ratios against it, so
  // the comparison survives a noisy, shared machine.
  auto plain = *bloom_filter::make(m, k);
  for (auto h : random_hashes(rng, 50'000))
    plain.insert(h);
  constexpr std::uint64_t base_iters = 200'000;
  auto base_keys = random_hashes(rng, base_iters);
  auto base_absent = random_hashes(rng, base_iters);
  auto base_chk = bench::time_runs(opt.runs, base_iters, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i)
      bench::do_not_optimize(plain.contains(base_absent[i % base_absent.size()]));
  });
  auto base_ins = bench::time_runs(opt.runs, base_iters, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i)
      plain.insert(base_keys[i % base_keys.size()]);
    bench::do_not_optimize(plain);
  });
  const auto base_ins_s = bench::summarize(base_ins);
  const auto base_chk_s = bench::summarize(base_chk);
  bench::print_line("bloom_filter.insert m=2^20 k=7 (baseline)", base_ins_s, opt.runs);
  bench::print_line("bloom_filter.check m=2^20 k=7 (baseline)", base_chk_s, opt.runs);
  for (std::size_t past : {std::size_t{1}, std::size_t{4}}) {
    // Fill to a realistic load: 50k elements per filter (FPP ~1e-5).
    auto fbf = make_fbf(m, k, past);
    auto t = fbf.clock();
    for (std::size_t r = 0; r < past + 2; ++r) {
      for (auto h : random_hashes(rng, 50'000))
        fbf.insert(h);
      t += fbf.refresh_period();
      (void) fbf.advance(t);
    }
    constexpr std::uint64_t iters = 200'000;
    auto fresh = random_hashes(rng, iters * (opt.runs + 1));
    std::size_t next = 0;
    auto ins = bench::time_runs(opt.runs, iters, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        bench::do_not_optimize(fbf.insert(fresh[next++ % fresh.size()]));
    });
    auto absent = random_hashes(rng, iters);
    auto chk = bench::time_runs(opt.runs, iters, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        bench::do_not_optimize(fbf.contains(absent[i % absent.size()]));
    });
    auto present = std::vector<std::uint64_t>(fresh.begin(), fresh.begin() + iters);
    auto hit = bench::time_runs(opt.runs, iters, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        bench::do_not_optimize(fbf.contains(present[i % present.size()]));
    });
    auto name = [&](const char* op) {
      return std::string{"fbf."} + op + " m=2^20 k=7 N=" + std::to_string(past);
    };
    const auto ins_s = bench::summarize(ins);
    const auto chk_s = bench::summarize(chk);
    bench::print_line(name("insert"), ins_s, opt.runs);
    bench::print_line(name("check_absent"), chk_s, opt.runs);
    bench::print_line(name("check_present"), bench::summarize(hit), opt.runs);
    std::printf("%-40s %10.2f x baseline insert, %.2f x baseline check\n",
                name("ratio").c_str(), ins_s.median / base_ins_s.median,
                chk_s.median / base_chk_s.median);
  }
}

void bench_clock(const options& opt) {
  std::mt19937_64 rng{opt.seed};
  for (std::uint32_t m : {64u, 1024u}) {
    auto a = *bloom_clock::make(m, 3);
    auto b = *bloom_clock::make(m, 3);
    for (int i = 0; i < 10'000; ++i) {
      a.tick(rng());
      b.tick(rng());
    }
    constexpr std::uint64_t iters = 1'000'000;
    auto events = random_hashes(rng, 4096);
    auto tick = bench::time_runs(opt.runs, iters, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        a.tick(events[i & 4095]);
      bench::do_not_optimize(a);
    });
    auto merge = bench::time_runs(opt.runs, iters / 10, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        bench::do_not_optimize(b.merge(a));
    });
    auto cmp = bench::time_runs(opt.runs, iters / 10, [&](std::uint64_t n) {
      for (std::uint64_t i = 0; i < n; ++i)
        bench::do_not_optimize(a.dominates(b));
    });
    auto sfx = " m=" + std::to_string(m) + " k=3";
    bench::print_line("bloom_clock.tick" + sfx, bench::summarize(tick), opt.runs);
    bench::print_line("bloom_clock.merge" + sfx, bench::summarize(merge), opt.runs);
    bench::print_line("bloom_clock.compare" + sfx, bench::summarize(cmp), opt.runs);
  }
  vector_clock x{{1, 100}, {2, 200}, {3, 300}};
  vector_clock y{{1, 150}, {2, 100}, {3, 300}};
  auto vmerge = bench::time_runs(opt.runs, 1'000'000, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
      vector_clock z = x;
      z.merge(y);
      bench::do_not_optimize(z);
    }
  });
  auto vcmp = bench::time_runs(opt.runs, 1'000'000, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i)
      bench::do_not_optimize(x.compare(y));
  });
  bench::print_line("vector_clock.merge_copy dcs=3", bench::summarize(vmerge), opt.runs);
  bench::print_line("vector_clock.compare dcs=3", bench::summarize(vcmp), opt.runs);
}

void bench_ring(const options& opt) {
  auto ring = ring_state::create("n0", 64, 3);
  for (const char* n : {"n1", "n2", "n3"})
    (void) ring->join(n);
  (void) ring->claim("n0");
  std::vector<std::string> keys;
  for (int i = 0; i < 4096; ++i)
    keys.push_back("key-" + std::to_string(i));
  auto part = bench::time_runs(opt.runs, 1'000'000, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i)
      bench::do_not_optimize(partition_for("counters", keys[i & 4095], 64));
  });
  auto pref = bench::time_runs(opt.runs, 200'000, [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i)
      bench::do_not_optimize(ring->preference_list("counters", keys[i & 4095]));
  });
  bench::print_line("ring.partition_for Q=64", bench::summarize(part), opt.runs);
  bench::print_line("ring.preference_list Q=64 n_val=3", bench::summarize(pref),
                    opt.runs);
}

// Equation 3 (FBF paper, section IV) against the rate measured with 200k
// absent probes (section VI-B's method), at several loads.
void bench_model(const options& opt) {
  std::printf("%-34s %9s %12s %12s %8s\n", "fbf model (Eq. 3 vs measured)",
              "elements", "measured", "equation3", "ratio");
  std::mt19937_64 rng{opt.seed};
  struct geometry {
    std::uint64_t m;
    unsigned k;
    std::size_t past;
    std::vector<std::size_t> per_refresh;
  };
  std::vector<geometry> cases = {
    {6250, 5, 1, {50, 100, 150, 200, 300}},
    {std::uint64_t{1} << 20, 7, 1, {40'000, 60'000, 80'000}},
    {25'000, 5, 3, {400, 800, 1600}},
  };
  for (const auto& g : cases) {
    for (std::size_t per : g.per_refresh) {
      auto fbf = make_fbf(g.m, g.k, g.past);
      auto t = fbf.clock();
      std::size_t inserted = 0;
      // Fill every slot: `per` elements per refresh period.
      for (std::size_t r = 0; r < g.past + 2; ++r) {
        for (std::size_t i = 0; i < per; ++i, ++inserted)
          fbf.insert(rng());
        if (r + 1 < g.past + 2) {
          t += fbf.refresh_period();
          (void) fbf.advance(t);
        }
      }
      constexpr int probes = 200'000;
      int positives = 0;
      for (int i = 0; i < probes; ++i)
        positives += fbf.contains(rng()) ? 1 : 0;
      double measured = positives / double(probes);
      double model = fbf.current_fpp();
      char label[64];
      std::snprintf(label, sizeof label, "m=%llu k=%u N=%zu",
                    static_cast<unsigned long long>(g.m), g.k, g.past);
      std::printf("%-34s %9zu %12.3e %12.3e %8s\n", label, inserted, measured,
                  model,
                  measured >= 1e-4
                    ? (std::to_string(model / measured).substr(0, 5)).c_str()
                    : "(<1e-4)");
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tally-micro: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--runs") {
      opt.runs = std::atoi(value().c_str());
      if (opt.runs < 1) {
        std::fprintf(stderr, "tally-micro: --runs must be at least 1\n");
        return 2;
      }
    } else if (a == "--seed") {
      opt.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--only") {
      opt.only = value();
      if (opt.only != "fbf" && opt.only != "clock" && opt.only != "ring"
          && opt.only != "model") {
        std::fprintf(stderr, "tally-micro: unknown --only '%s'\n", opt.only.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "tally-micro: unknown argument '%s' (see --help)\n",
                   a.c_str());
      return 2;
    }
  }
  bench::warn_if_unoptimized();
  std::printf("tally-micro build=%s runs=%d seed=%llu\n", TALLY_BUILD_TYPE,
              opt.runs, static_cast<unsigned long long>(opt.seed));
  auto want = [&](const char* s) { return opt.only.empty() || opt.only == s; };
  if (want("fbf"))
    bench_fbf(opt);
  if (want("clock"))
    bench_clock(opt);
  if (want("ring"))
    bench_ring(opt);
  if (want("model"))
    bench_model(opt);
  return 0;
}
