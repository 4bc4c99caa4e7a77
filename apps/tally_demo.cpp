// tally-demo: what Tally's core does, shown on simulated time.
//
//  1. Exactly-once counters: a client increments a counter and retries a
//     share of its requests (a lost acknowledgement); the partition gates
//     every operation id through a Forgetful Bloom Filter. The FBF-gated
//     counter ends at the number of distinct increments; the ungated one
//     counts every retry again.
//  2. Bloom clocks: events on three processes; the Bloom clock answers "not
//     causally after" exactly and cheaply, and every positive is confirmed
//     with the exact vector clock.
//  3. The ring: where keys live on a 64-partition ring of three nodes.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "clock/bloom_clock.hpp"
#include "clock/vector_clock.hpp"
#include "crdt/op_id.hpp"
#include "crdt/pn_counter.hpp"
#include "fbf/forgetful_bloom_filter.hpp"
#include "ring/ring_state.hpp"

using namespace tally;
using namespace std::chrono_literals;

namespace {

struct options {
  std::uint64_t ops = 100'000;
  double retry_rate = 0.1;
  std::uint64_t seed = 1;
};

void usage() {
  std::puts(
    "usage: tally-demo [--ops N] [--retry-rate P] [--seed S]\n"
    "\n"
    "Runs Tally's core structures on simulated time and prints what they do:\n"
    "exactly-once counter increments through a Forgetful Bloom Filter while a\n"
    "client retries a share P of its requests (default 0.1) over N operations\n"
    "(default 100000), Bloom-clock causality checks confirmed by vector\n"
    "clocks, and key placement on the ring. Deterministic for a given seed.");
}

int fail(const error& e) {
  std::fprintf(stderr, "tally-demo: %s\n", e.to_string().c_str());
  return 1;
}

int counters(const options& opt) {
  std::puts("== Exactly-once counters (Forgetful Bloom Filter) ==");
  fbf_config cfg;
  cfg.bits_per_filter = 1 << 20;
  cfg.hashes = 7;
  cfg.past_filters = 3;
  cfg.refresh_period = 2s;
  cfg.retry_timeout = 5s; // the window (N+1)*t = 8 s covers the retry timeout
  auto fbf = forgetful_bloom_filter::make(cfg);
  if (!fbf)
    return fail(fbf.err());
  std::mt19937_64 rng{opt.seed};
  std::bernoulli_distribution retried{opt.retry_rate};
  pn_counter gated, ungated;
  const std::uint64_t client = rng();
  auto now = fbf->clock();
  std::uint64_t distinct = 0, retries = 0, duplicates_dismissed = 0;
  for (std::uint64_t seq = 1; seq <= opt.ops; ++seq) {
    now += 1ms; // one increment per simulated millisecond
    if (auto st = fbf->advance(now); !st)
      return fail(st.err());
    const op_id id{client, seq};
    int sends = retried(rng) ? 2 : 1; // a lost ack makes the client resend
    retries += static_cast<std::uint64_t>(sends - 1);
    ++distinct;
    for (int s = 0; s < sends; ++s) {
      auto eff = ungated.prepare({1});
      if (!eff || !ungated.apply(*eff))
        return fail(make_error(errc::overflow, "demo counter overflowed"));
      if (fbf->insert(id.hash()) == insert_outcome::already_member) {
        ++duplicates_dismissed;
        continue; // acknowledged again, not applied again
      }
      if (auto st = gated.apply(counter_effect{1}); !st)
        return fail(st.err());
    }
  }
  std::printf("distinct increments     %llu\n", (unsigned long long) distinct);
  std::printf("retried requests        %llu\n", (unsigned long long) retries);
  std::printf("counter without FBF     %lld  (%+.2f%%)\n",
              (long long) ungated.value(),
              100.0 * (double(ungated.value()) - double(distinct)) / double(distinct));
  std::printf("counter behind the FBF  %lld  (%+.4f%%)\n", (long long) gated.value(),
              100.0 * (double(gated.value()) - double(distinct)) / double(distinct));
  std::printf("duplicates dismissed    %llu\n", (unsigned long long) duplicates_dismissed);
  std::printf("FBF: %zu filters of %llu bits, k=%u, window %lld ms, model FPP %.2e\n\n",
              fbf->filter_count(), (unsigned long long) fbf->bits_per_filter(),
              fbf->hash_count(), (long long) fbf->window().count(),
              fbf->current_fpp());
  return 0;
}

int clocks() {
  std::puts("== Bloom clocks, confirmed by vector clocks ==");
  auto b = *bloom_clock::make(16, 2);
  auto bp = b, bq = b, br = b;
  vector_clock vp, vq, vr;
  // p ticks, sends to q; q ticks; r ticks independently.
  bp.tick(bloom_event(1, 1));
  vp.advance(1, 1);
  auto b_send = bp;
  auto v_send = vp;
  (void) bq.merge(b_send);
  vq.merge(v_send);
  bq.tick(bloom_event(2, 1));
  vq.advance(2, 1);
  br.tick(bloom_event(3, 1));
  vr.advance(3, 1);
  auto report = [](const char* what, const bloom_clock& y, const bloom_clock& z,
                   const vector_clock& vy, const vector_clock& vz) {
    bool bloom = *z.dominates(y);
    const char* verdict = !bloom ? "no (Bloom clock: certain, no vector clock needed)"
                          : vy <= vz ? "yes (Bloom positive, confirmed by vector clock)"
                                     : "no (Bloom false positive, caught by vector clock)";
    std::printf("%-28s %s\n", what, verdict);
  };
  report("p's send -> q's event?", b_send, bq, v_send, vq);
  report("q's event -> p's send?", bq, b_send, vq, v_send);
  report("p's send -> r's event?", b_send, br, v_send, vr);
  std::puts("");
  return 0;
}

int placement() {
  std::puts("== Keys on the ring (Q = 64, n_val = 3, four nodes) ==");
  auto ring = ring_state::create("tally@127.0.0.1:9100", 64, 3);
  if (!ring)
    return fail(ring.err());
  for (const char* n : {"tally@127.0.0.1:9101", "tally@127.0.0.1:9102",
                        "tally@127.0.0.1:9103"})
    if (auto st = ring->join(n); !st)
      return fail(st.err());
  auto claimant = ring->claimant();
  auto moved = ring->claim(claimant ? *claimant : "tally@127.0.0.1:9100");
  if (!moved)
    return fail(moved.err());
  std::printf("joining three nodes moved %zu of 64 partitions\n", moved->size());
  for (const char* key : {"likes", "views", "clicks"}) {
    auto prefs = ring->preference_list("counters", key);
    std::printf("counters/%-8s preference list:", key);
    for (const auto& r : prefs)
      std::printf(" p%u@%s", r.partition, r.node.c_str());
    std::puts("");
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tally-demo: %s needs a value (see --help)\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--ops") {
      opt.ops = std::strtoull(value(), nullptr, 10);
    } else if (a == "--retry-rate") {
      opt.retry_rate = std::atof(value());
      if (opt.retry_rate < 0 || opt.retry_rate > 1) {
        std::fprintf(stderr, "tally-demo: --retry-rate must be in [0, 1]\n");
        return 2;
      }
    } else if (a == "--seed") {
      opt.seed = std::strtoull(value(), nullptr, 10);
    } else {
      std::fprintf(stderr, "tally-demo: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (int rc = counters(opt))
    return rc;
  if (int rc = clocks())
    return rc;
  return placement();
}
