#include "bench/experiments/bloom_sim.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <string>
#include <utility>

#include "bench/experiments/rng.hpp"

namespace tally::experiments {

namespace {

expected<std::vector<bloom_clock>> make_clocks(
    const std::vector<clock_config>& configs) {
  std::vector<bloom_clock> out;
  out.reserve(configs.size());
  for (const clock_config& c : configs) {
    auto clock = bloom_clock::make(c.m, c.k);
    if (!clock)
      return clock.err();
    out.push_back(std::move(*clock));
  }
  return out;
}

// One process's clocks and event counter.
struct process_state {
  vector_clock vc;
  std::vector<bloom_clock> bloom;
  std::uint64_t seq = 0; // events executed so far = own vector-clock entry
};

// The clocks a message carries (Algorithm 1: piggybacked B(i), and V(i)).
struct message {
  vector_clock vc;
  std::vector<bloom_clock> bloom;
};

// Local tick of Algorithm 1 (and of the vector clock) for the next event of
// process `id`.
void tick(process_state& p, std::uint32_t id) {
  ++p.seq;
  p.vc.advance(id, p.seq);
  const std::uint64_t event = bloom_event(id, p.seq);
  for (bloom_clock& b : p.bloom)
    b.tick(event);
}

// Receive-side merge of Algorithm 1 (then the caller ticks).
status merge(process_state& p, const message& m) {
  p.vc.merge(m.vc);
  for (std::size_t c = 0; c < p.bloom.size(); ++c)
    if (auto st = p.bloom[c].merge(m.bloom[c]); !st)
      return st;
  return {};
}

} // namespace

expected<std::uint64_t> simulate_complete_graph(const complete_graph_params& p,
                                                const event_observer& observe) {
  if (p.n < 2 || !(p.pr_internal >= 0.0 && p.pr_internal <= 1.0))
    return make_error(errc::invalid_argument,
                      "complete-graph simulation needs n >= 2 processes and "
                      "pr_i in [0, 1], got n = "
                          + std::to_string(p.n)
                          + ", pr_i = " + std::to_string(p.pr_internal) + ".");
  auto zero = make_clocks(p.clocks);
  if (!zero)
    return zero.err();
  const std::uint64_t target =
      p.events ? p.events : std::uint64_t{p.n} * std::uint64_t{p.n};
  std::vector<process_state> procs(p.n);
  for (process_state& s : procs)
    s.bloom = *zero;
  std::vector<std::deque<message>> local_queue(p.n);
  std::vector<std::uint32_t> order(p.n);
  std::iota(order.begin(), order.end(), 0u);
  rng gen(p.seed);
  const double pr_send_cut = p.pr_internal + (1.0 - p.pr_internal) / 2.0;
  std::uint64_t gsn = 0;
  // One step of process `id`: draw the event kind, execute it (or nothing).
  auto step = [&](std::uint32_t id) -> status {
    const double u = gen.unit();
    event_kind kind = u < p.pr_internal ? event_kind::internal
                      : u < pr_send_cut ? event_kind::send
                                        : event_kind::receive;
    if (kind == event_kind::receive && local_queue[id].empty()) {
      if (!p.send_when_queue_empty)
        return {}; // nothing delivered yet: this step executes no event
      kind = event_kind::send;
    }
    process_state& self = procs[id];
    if (kind == event_kind::receive) {
      do {
        std::deque<message>& q = local_queue[id];
        const message m = std::move(p.lifo ? q.back() : q.front());
        if (p.lifo)
          q.pop_back();
        else
          q.pop_front();
        if (auto st = merge(self, m); !st)
          return st;
        tick(self, id);
        ++gsn;
        observe(event_view{gsn, id, kind, self.vc, self.bloom});
      } while (p.drain_queue && !local_queue[id].empty() && gsn < target);
      return {};
    }
    tick(self, id);
    if (kind == event_kind::send) {
      auto to = static_cast<std::uint32_t>(gen.below(p.n - 1));
      if (to >= id)
        ++to; // uniformly among the other n - 1 processes
      local_queue[to].push_back(message{self.vc, self.bloom});
    }
    ++gsn;
    observe(event_view{gsn, id, kind, self.vc, self.bloom});
    return {};
  };
  while (gsn < target) {
    if (p.schedule == complete_graph_params::scheduler::uniform) {
      if (auto st = step(static_cast<std::uint32_t>(gen.below(p.n))); !st)
        return st.err();
      continue;
    }
    for (std::uint32_t i = p.n - 1; i > 0; --i) // Fisher-Yates: a new round order
      std::swap(order[i], order[gen.below(i + 1)]);
    for (std::uint32_t id : order) {
      if (gsn == target)
        break;
      if (auto st = step(id); !st)
        return st.err();
    }
  }
  return gsn;
}

expected<std::uint64_t> simulate_star(const star_params& p,
                                      const event_observer& observe) {
  if (p.clients < 1)
    return make_error(errc::invalid_argument,
                      "star simulation needs at least one client.");
  auto zero = make_clocks(p.clocks);
  if (!zero)
    return zero.err();
  const std::uint32_t n = p.clients;
  const std::uint32_t server = n;
  const std::uint64_t requests = p.requests_per_client ? p.requests_per_client : n;
  std::vector<process_state> procs(n + 1);
  for (process_state& s : procs)
    s.bloom = *zero;
  // The pipeline of one blocking request, in order.
  enum class stage : std::uint8_t { client_send, server_receive, server_reply,
                                    client_receive };
  std::vector<stage> next(n, stage::client_send);
  std::vector<std::uint64_t> left(n, requests);
  std::vector<message> in_flight(n); // the request or the reply of client c
  std::vector<std::uint32_t> active(n);
  std::iota(active.begin(), active.end(), 0u);
  rng gen(p.seed);
  std::uint64_t gsn = 0;
  while (!active.empty()) {
    const std::size_t slot = gen.below(active.size());
    const std::uint32_t c = active[slot];
    std::uint32_t at = c;
    event_kind kind = event_kind::send;
    switch (next[c]) {
      case stage::client_send:
        tick(procs[c], c);
        in_flight[c] = message{procs[c].vc, procs[c].bloom};
        next[c] = stage::server_receive;
        break;
      case stage::server_receive:
        at = server;
        kind = event_kind::receive;
        if (auto st = merge(procs[server], in_flight[c]); !st)
          return st.err();
        tick(procs[server], server);
        next[c] = stage::server_reply;
        break;
      case stage::server_reply:
        at = server;
        tick(procs[server], server);
        in_flight[c] = message{procs[server].vc, procs[server].bloom};
        next[c] = stage::client_receive;
        break;
      case stage::client_receive:
        kind = event_kind::receive;
        if (auto st = merge(procs[c], in_flight[c]); !st)
          return st.err();
        tick(procs[c], c);
        next[c] = stage::client_send;
        if (--left[c] == 0) {
          active[slot] = active.back();
          active.pop_back();
        }
        break;
    }
    ++gsn;
    observe(event_view{gsn, at, kind, procs[at].vc, procs[at].bloom});
  }
  return gsn;
}

expected<std::uint64_t> simulate_broadcast(const broadcast_params& p,
                                           const event_observer& observe) {
  if (p.n < 2)
    return make_error(errc::invalid_argument,
                      "broadcast simulation needs n >= 2 processes, got n = "
                          + std::to_string(p.n) + ".");
  auto zero = make_clocks(p.clocks);
  if (!zero)
    return zero.err();
  const std::uint32_t n = p.n;
  std::vector<process_state> procs(n);
  for (process_state& s : procs)
    s.bloom = *zero;
  // A broadcast is one message: each local queue holds the senders' ids, in
  // the order they broadcast, and every receiver reads the same clocks.
  std::vector<message> broadcast(n);
  std::vector<bool> sent(n, false);
  std::vector<std::deque<std::uint32_t>> local_queue(n);
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  rng gen(p.seed);
  const std::uint64_t total = std::uint64_t{n} * n; // n sends, n (n - 1) receives
  std::uint64_t gsn = 0;
  while (gsn < total) {
    for (std::uint32_t i = n - 1; i > 0; --i) // Fisher-Yates: a new round order
      std::swap(order[i], order[gen.below(i + 1)]);
    for (std::uint32_t id : order) {
      process_state& self = procs[id];
      event_kind kind = event_kind::send;
      if (!sent[id]) {
        tick(self, id);
        broadcast[id] = message{self.vc, self.bloom};
        sent[id] = true;
        for (std::uint32_t to = 0; to < n; ++to)
          if (to != id)
            local_queue[to].push_back(id);
      } else if (!local_queue[id].empty()) {
        kind = event_kind::receive;
        const std::uint32_t from = local_queue[id].front();
        local_queue[id].pop_front();
        if (auto st = merge(self, broadcast[from]); !st)
          return st.err();
        tick(self, id);
      } else {
        continue; // waiting for broadcasts: no event
      }
      ++gsn;
      observe(event_view{gsn, id, kind, self.vc, self.bloom});
    }
  }
  return gsn;
}

event_sampler::event_sampler(std::uint32_t processes, std::uint64_t first,
                             std::uint64_t step)
    : processes_(processes), first_(first), step_(step ? step : 1) {}

void event_sampler::operator()(const event_view& e) {
  if (e.gsn < first_ || (e.gsn - first_) % step_ != 0)
    return;
  sampled_event s;
  s.gsn = e.gsn;
  s.process = e.process;
  s.vc.assign(processes_, 0);
  for (const auto& entry : e.vc.entries())
    if (entry.dc < processes_)
      s.vc[entry.dc] = static_cast<std::uint32_t>(entry.time);
  s.bloom = e.bloom;
  samples_.push_back(std::move(s));
}

bool happened_before(const sampled_event& y, const sampled_event& z) noexcept {
  return &y != &z && y.gsn != z.gsn && z.vc[y.process] >= y.vc[y.process];
}

expected<confusion_counts> classify_pairs(
    const std::vector<sampled_event>& samples, std::size_t clock) {
  confusion_counts counts;
  for (const sampled_event& y : samples) {
    if (clock >= y.bloom.size())
      return make_error(errc::invalid_argument,
                        "classify_pairs: no Bloom clock number "
                            + std::to_string(clock) + " in the samples.");
    for (const sampled_event& z : samples) {
      if (&y == &z)
        continue;
      auto predicted = z.bloom[clock].dominates(y.bloom[clock]);
      if (!predicted)
        return predicted.err();
      counts.record(happened_before(y, z), *predicted);
    }
  }
  return counts;
}

slice_metrics metrics_of(const confusion_counts& c) noexcept {
  slice_metrics m;
  m.precision = c.precision();
  m.accuracy = c.accuracy();
  m.fpr = c.fpr();
  m.pairs = c.tp + c.fp + c.tn + c.fn;
  m.alpha = m.pairs ? static_cast<double>(c.tp + c.fn) / static_cast<double>(m.pairs)
                    : std::nan("");
  return m;
}

slice_metrics mean_of(const std::vector<slice_metrics>& runs) noexcept {
  slice_metrics out;
  if (runs.empty())
    return out;
  for (const slice_metrics& r : runs) {
    out.precision += r.precision;
    out.accuracy += r.accuracy;
    out.fpr += r.fpr;
    out.alpha += r.alpha;
    out.pairs += r.pairs;
  }
  const auto n = static_cast<double>(runs.size());
  out.precision /= n;
  out.accuracy /= n;
  out.fpr /= n;
  out.alpha /= n;
  return out;
}

namespace {

expected<run_metrics> classify_all(const event_sampler& sampler,
                                   std::size_t clocks, std::uint64_t events) {
  run_metrics out;
  out.events = events;
  out.samples = sampler.samples().size();
  for (std::size_t c = 0; c < clocks; ++c) {
    auto counts = classify_pairs(sampler.samples(), c);
    if (!counts)
      return counts.err();
    out.per_clock.push_back(metrics_of(*counts));
  }
  return out;
}

} // namespace

expected<run_metrics> complete_graph_run(const complete_graph_params& p,
                                         std::uint64_t first,
                                         std::uint64_t step) {
  event_sampler sampler(p.n, first, step);
  auto events = simulate_complete_graph(
      p, [&](const event_view& e) { sampler(e); });
  if (!events)
    return events.err();
  return classify_all(sampler, p.clocks.size(), *events);
}

namespace {

// 1-based ranks, ties at their mean rank.
std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]])
      ++j;
    const double mean_rank = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (std::size_t t = i; t <= j; ++t)
      r[idx[t]] = mean_rank;
    i = j + 1;
  }
  return r;
}

} // namespace

double rank_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2)
    return std::nan("");
  // Pearson's correlation of the ranks.
  const std::vector<double> rx = ranks_of(x), ry = ranks_of(y);
  const double n = static_cast<double>(x.size());
  const double mean = (n + 1.0) / 2.0;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : std::nan("");
}

expected<run_metrics> broadcast_run(const broadcast_params& p,
                                    std::uint64_t first, std::uint64_t step) {
  event_sampler sampler(p.n, first, step);
  auto events = simulate_broadcast(p, [&](const event_view& e) { sampler(e); });
  if (!events)
    return events.err();
  return classify_all(sampler, p.clocks.size(), *events);
}

expected<run_metrics> star_run(const star_params& p, std::uint64_t step) {
  event_sampler sampler(p.clients + 1, step, step);
  auto events = simulate_star(p, [&](const event_view& e) { sampler(e); });
  if (!events)
    return events.err();
  return classify_all(sampler, p.clocks.size(), *events);
}

} // namespace tally::experiments
