// The Bloom clock experiments' machinery (Bloom clock paper, seed 002,
// sections 5 and 6): simulated executions of n processes that tick Tally's
// vector_clock (the ground truth) and bloom_clock (Algorithm 1) at every
// event, sampling of events, and the classification of every ordered pair of
// sampled events (y, z) into true/false positives and negatives.
//
// Scheduling model of the complete graph (section 5), a discrete stand-in for
// the paper's n OS processes on shared memory:
//  - Time advances in rounds. In every round each process takes one step, in
//    a fresh uniformly random order (the paper's "fair" scheduler).
//  - A step draws the event kind: internal with probability pr_i, send and
//    receive with (1 - pr_i) / 2 each. A send goes to a uniformly random
//    other process. The paper's shared message queue, from which every
//    process "asynchronously pulls" its messages into a local queue, is held
//    as one FIFO inbox per destination: a message is in its receiver's local
//    queue from the moment it is sent (shared memory, no transport delay).
//  - A receive takes the oldest message of the local queue. When the local
//    queue is empty the step does nothing: no event, no GSN.
//  - Every event gets the next global sequence number (GSN, from 1); the run
//    stops at GSN = n^2 (the paper's "until the GSN reaches n^2").
// Client-server star (section 6): n clients and one server (process n).
// Each client sends n requests, one at a time and blocking: client send,
// server receive, server reply send, client receive. At every step one
// client's pending stage is executed, the client chosen uniformly among those
// with work left, so the server's events for different clients interleave as
// the paper's server threads do under their single lock.
// Broadcast (section 7.2): every process broadcasts one message to the n - 1
// others (one send event), then receives the n - 1 broadcasts of the others
// (one receive event each); the same fair rounds and FIFO local queues as the
// complete graph, n^2 events in all.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "clock/bloom_clock.hpp"
#include "clock/bloom_probability.hpp"
#include "clock/vector_clock.hpp"
#include "common/expected.hpp"

namespace tally::experiments {

/// One Bloom clock geometry tracked by a simulation. m = k = 1 is Lamport's
/// scalar clock (paper, section 3).
struct clock_config {
  std::uint32_t m = 10;
  std::uint32_t k = 2;
};

enum class event_kind : std::uint8_t { internal, send, receive };

/// What a simulation reports for each event, after the event's clock update.
struct event_view {
  std::uint64_t gsn; // 1-based, in execution order
  std::uint32_t process;
  event_kind kind;
  const vector_clock& vc;                // the process's vector timestamp
  const std::vector<bloom_clock>& bloom; // one per clock_config
};

using event_observer = std::function<void(const event_view&)>;

struct complete_graph_params {
  std::uint32_t n = 100;   // processes, >= 2
  double pr_internal = 0;  // pr_i in [0, 1]
  std::vector<clock_config> clocks;
  std::uint64_t events = 0; // 0: n^2
  std::uint64_t seed = 1;
  /// What a step that draws "receive" does when its local queue is empty:
  /// nothing (false, the model above) or a send instead (true, a variant
  /// for the sensitivity check in docs/EXPERIMENTS.md).
  bool send_when_queue_empty = false;
  /// Variants of the scheduling model for the sensitivity study
  /// (`bloom-model`, docs/EXPERIMENTS.md); the defaults are the model above.
  /// Who takes the next step: every process once per round in a fresh
  /// random order (rounds), or a uniformly random process at every step
  /// (uniform: no fairness within a round, as an OS scheduler).
  enum class scheduler : std::uint8_t { rounds, uniform };
  scheduler schedule = scheduler::rounds;
  /// A receive takes the newest message of the local queue instead of the
  /// oldest.
  bool lifo = false;
  /// A step that draws "receive" executes a receive event for every message
  /// in the local queue, one at a time, instead of one.
  bool drain_queue = false;
};

/// Runs the complete-graph execution, calling `observe` for every event.
/// Returns the number of events. errc::invalid_argument for n < 2, pr_i
/// outside [0, 1] or a clock geometry bloom_clock::make refuses.
expected<std::uint64_t> simulate_complete_graph(const complete_graph_params& p,
                                                const event_observer& observe);

struct star_params {
  std::uint32_t clients = 50;           // n, >= 1
  std::uint64_t requests_per_client = 0; // 0: n
  std::vector<clock_config> clocks;
  std::uint64_t seed = 1;
};

/// Runs the client-server execution (processes 0..n-1 clients, n the
/// server). Returns the number of events (4 per request).
expected<std::uint64_t> simulate_star(const star_params& p,
                                      const event_observer& observe);

struct broadcast_params {
  std::uint32_t n = 100; // processes, >= 2
  std::vector<clock_config> clocks;
  std::uint64_t seed = 1;
};

/// Runs section 7.2's broadcast execution: in fair rounds (every process
/// one step per round, a fresh random order each round), a process's first
/// step is its broadcast, a send event whose message (its clocks) lands in
/// the local queue of every other process; each later step receives the
/// oldest message of its local queue (merge, then tick: Algorithm 1), or
/// does nothing while it is empty. A process is done after its n - 1
/// receives. Returns the number of events (n^2). errc::invalid_argument for
/// n < 2 or a clock geometry bloom_clock::make refuses.
expected<std::uint64_t> simulate_broadcast(const broadcast_params& p,
                                           const event_observer& observe);

/// A sampled event's timestamps: the dense vector timestamp and the Bloom
/// timestamps. Only sampled events are stored (memory: samples x n).
struct sampled_event {
  std::uint64_t gsn = 0;
  std::uint32_t process = 0;
  std::vector<std::uint32_t> vc;
  std::vector<bloom_clock> bloom;
};

/// Keeps the events with GSN first, first + step, first + 2 step, ...
class event_sampler {
public:
  event_sampler(std::uint32_t processes, std::uint64_t first,
                std::uint64_t step);
  void operator()(const event_view& e);
  const std::vector<sampled_event>& samples() const noexcept {
    return samples_;
  }

private:
  std::uint32_t processes_;
  std::uint64_t first_;
  std::uint64_t step_;
  std::vector<sampled_event> samples_;
};

/// y -> z, exactly and in O(1): z has seen y's process at least up to y
/// (V_z[proc(y)] >= V_y[proc(y)]) and z is not y.
bool happened_before(const sampled_event& y, const sampled_event& z) noexcept;

/// Every ordered pair (y, z), y != z, of the samples classified with Bloom
/// clock number `clock`: actual = happened_before(y, z), predicted =
/// B_z >= B_y (Proposition 1).
expected<confusion_counts> classify_pairs(
    const std::vector<sampled_event>& samples, std::size_t clock);

/// Equation 8's metrics of one slice, plus the causality spread alpha of
/// section 7.2 (actual positives / all pairs).
struct slice_metrics {
  double precision = 0;
  double accuracy = 0;
  double fpr = 0;
  double alpha = 0;
  std::uint64_t pairs = 0;
};

slice_metrics metrics_of(const confusion_counts& c) noexcept;

/// The mean of each metric (the paper averages readings over runs and over
/// settings of m and k); pairs are summed.
slice_metrics mean_of(const std::vector<slice_metrics>& runs) noexcept;

/// One run's metrics, one entry per clock_config.
struct run_metrics {
  std::vector<slice_metrics> per_clock;
  std::uint64_t events = 0;
  std::uint64_t samples = 0;
};

/// Section 5's slice: samples every `step` events from GSN `first` (the paper:
/// from 10n in steps of 100) up to the last event; all ordered pairs.
expected<run_metrics> complete_graph_run(const complete_graph_params& p,
                                         std::uint64_t first,
                                         std::uint64_t step);

/// Spearman's rank correlation of x and y (same size >= 2; ties get their
/// mean rank): how monotonically y follows x, in [-1, 1]. NaN if either is
/// constant. For Fig. 5's causality spread hypothesis (section 7.2).
double rank_correlation(const std::vector<double>& x, const std::vector<double>& y);

/// Section 7.2's broadcast slice, sampled like section 5's: from GSN
/// `first` (10n) in steps of `step` (100); all ordered pairs.
expected<run_metrics> broadcast_run(const broadcast_params& p,
                                    std::uint64_t first, std::uint64_t step);

/// Section 6's slice: every `step`-th event of the whole log.
expected<run_metrics> star_run(const star_params& p, std::uint64_t step);

} // namespace tally::experiments
