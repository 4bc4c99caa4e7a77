#include "bench/load/runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include <unistd.h>

#include "bench/report/svg_plot.hpp"

namespace tally::load {

namespace {

using steady = std::chrono::steady_clock;

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

/// What every worker shares.
struct shared_state {
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::atomic<bool> abort_all{false};
  steady::time_point start;         // warmup begins
  steady::time_point measure_start; // measurement begins
  std::optional<steady::time_point> end;
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> errors{0};
  std::mutex mu;
  std::vector<second_stats> timeline;
};

/// One worker's results.
struct worker_result {
  std::string failure;
  std::uint64_t ops[op_type_count] = {0, 0, 0};
  histogram latency[op_type_count];
  std::map<std::string, std::uint64_t> errors;
  std::uint64_t resent = 0;
  std::uint64_t unknown = 0;
  std::unordered_map<std::uint64_t, std::int64_t> expected;
  std::unordered_map<std::uint64_t, set_marks> sets;           // --type set
  std::unordered_map<std::uint64_t, register_marks> registers; // --type register
};

class worker {
public:
  worker(const target& t, const workload& w, unsigned index, shared_state& s,
         std::uint64_t quota)
    : w_(w), s_(s), index_(index), quota_(quota),
      keys_(w.dist, w.dist_param, w.keys,
            w.seed * 0x9E3779B97F4A7C15ULL + index + 1,
            w.keys * index / std::max(1u, w.connections)),
      mixer_(w.read_weight, w.write_weight, index * 7919ULL),
      rng_(w.seed ^ ((index + 1ULL) * 0xD1B54A32D192ED03ULL)),
      driver_(make_driver(t, w, index + 1)) {}

  worker_result& result() { return r_; }

  void run() {
    r_.failure = driver_->connect();
    s_.ready.fetch_add(1);
    if (!r_.failure.empty()) {
      s_.abort_all = true;
      return;
    }
    while (!s_.go.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (s_.abort_all)
      return;
    if (w_.mode == mode_kind::interactive)
      run_interactive();
    else
      run_pipelined();
    flush_second();
    driver_->close();
  }

private:
  struct inflight {
    op o;
    steady::time_point sent;
    int role = 0; // 0 alone, 1 original of a resent pair, 2 the resend
  };

  std::vector<std::uint64_t> draw_keys(unsigned n) {
    std::vector<std::uint64_t> ks;
    ks.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      std::uint64_t k = keys_.next();
      // Distinct keys within one request when there are enough keys.
      for (int tries = 0;
           tries < 16 && std::find(ks.begin(), ks.end(), k) != ks.end(); ++tries)
        k = keys_.next();
      ks.push_back(k);
    }
    return ks;
  }

  op make_op() {
    op o;
    if (w_.mode == mode_kind::interactive) {
      o.kind = op::type::txn;
      o.read_keys = draw_keys(w_.mode_reads);
      o.update_keys = draw_keys(w_.mode_writes);
    } else {
      const bool read = mixer_.next_is_read();
      const unsigned n = w_.mode == mode_kind::static_single
                           ? 1
                           : (read ? w_.mode_reads : w_.mode_writes);
      o.kind = read ? op::type::read : op::type::update;
      (read ? o.read_keys : o.update_keys) = draw_keys(n);
    }
    if (!o.update_keys.empty() && w_.retry_rate > 0)
      o.dup = std::uniform_real_distribution<double>{0, 1}(rng_) < w_.retry_rate;
    for (std::size_t i = 0; i < o.update_keys.size() && w_.type != data_kind::counter; ++i) {
      typed_write t;
      if (w_.type == data_kind::set) {
        t.remove = (rng_() & 1) != 0;
        t.item = std::uniform_int_distribution<std::uint64_t>{0, w_.elements - 1}(rng_);
      } else {
        // Unique in the run: the connection in the high bits.
        t.item = (static_cast<std::uint64_t>(index_ + 1) << 40) | ++values_;
      }
      o.writes.push_back(t);
    }
    mark_sent(o);
    return o;
  }

  // Sets and registers: what was sent to each key, acknowledged or not.
  void mark_sent(const op& o) {
    for (std::size_t i = 0; i < o.writes.size(); ++i) {
      const auto k = o.update_keys[i];
      const auto& t = o.writes[i];
      if (w_.type == data_kind::set)
        (t.remove ? r_.sets[k].remove_sent : r_.sets[k].add_sent) |= std::uint64_t{1} << t.item;
      else
        r_.registers[k].sent.insert(t.item);
    }
  }

  bool may_start(steady::time_point now) {
    if (s_.abort_all)
      return false;
    if (s_.end)
      return now < *s_.end;
    if (now < s_.measure_start)
      return true;
    return started_measured_ < quota_;
  }

  void credit(const op& o) {
    if (w_.type == data_kind::counter) {
      for (auto k : o.update_keys)
        r_.expected[k] += w_.inc;
      return;
    }
    for (std::size_t i = 0; i < o.writes.size(); ++i) {
      const auto k = o.update_keys[i];
      const auto& t = o.writes[i];
      if (w_.type == data_kind::reg)
        r_.registers[k].acked = true;
      else if (!t.remove)
        r_.sets[k].add_acked |= std::uint64_t{1} << t.item;
    }
  }

  void record(const op& o, steady::time_point sent, steady::time_point now,
              const outcome& out) {
    s_.done.fetch_add(1, std::memory_order_relaxed);
    if (!out.ok)
      s_.errors.fetch_add(1, std::memory_order_relaxed);
    if (sent < s_.measure_start)
      return;
    const auto t = static_cast<unsigned>(o.kind);
    const auto sec = static_cast<std::size_t>(
      std::chrono::duration_cast<std::chrono::seconds>(now - s_.measure_start)
        .count());
    if (sec != cur_sec_) {
      flush_second();
      cur_sec_ = sec;
    }
    if (out.ok) {
      const auto ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent).count());
      ++r_.ops[t];
      r_.latency[t].record(ns);
      ++cur_.ops[t];
      cur_.latency[t].record(ns);
    } else {
      ++r_.errors[out.error];
      ++cur_.errors;
    }
  }

  void flush_second() {
    if (cur_.ops[0] + cur_.ops[1] + cur_.ops[2] + cur_.errors == 0)
      return;
    {
      std::lock_guard<std::mutex> lock(s_.mu);
      if (s_.timeline.size() <= cur_sec_)
        s_.timeline.resize(cur_sec_ + 1);
      auto& g = s_.timeline[cur_sec_];
      for (unsigned t = 0; t < op_type_count; ++t) {
        g.ops[t] += cur_.ops[t];
        g.latency[t].merge(cur_.latency[t]);
      }
      g.errors += cur_.errors;
    }
    for (unsigned t = 0; t < op_type_count; ++t) {
      cur_.ops[t] = 0;
      cur_.latency[t].clear();
    }
    cur_.errors = 0;
  }

  bool reconnect() {
    driver_->close();
    for (int i = 0; i < 20 && !s_.abort_all; ++i) {
      if (driver_->connect().empty())
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    r_.failure = "connection lost and could not reconnect";
    return false;
  }

  // --rate: this connection's share of the rate, as the gap between the
  // scheduled starts of its operations (zero: no schedule).
  steady::duration gap() const {
    if (w_.rate <= 0)
      return steady::duration::zero();
    return std::chrono::duration_cast<steady::duration>(
      std::chrono::duration<double>(w_.connections / w_.rate));
  }
  // With --rate, waits for the next scheduled start and returns it (the
  // time latency is measured from); else now.
  steady::time_point scheduled(steady::time_point now) {
    if (w_.rate <= 0)
      return now;
    if (next_start_ == steady::time_point{})
      next_start_ = now + gap() * index_ / std::max(1u, w_.connections);
    auto at = next_start_;
    next_start_ += gap();
    if (at > now)
      std::this_thread::sleep_until(at);
    return at;
  }

  void run_pipelined() {
    std::deque<inflight> window;
    bool pair_ok = false;
    const std::size_t k = w_.outstanding;
    for (;;) {
      auto now = steady::now();
      while (window.size() < k && may_start(now)) {
        // A fixed rate starts one operation when it is due; with others in
        // flight it receives first.
        if (w_.rate > 0 && !window.empty() && next_start_ > now)
          break;
        now = scheduled(now);
        op o = make_op();
        if (now >= s_.measure_start)
          ++started_measured_;
        std::string e = driver_->send(o);
        bool dup = o.dup && e.empty();
        if (dup) {
          e = driver_->send_again();
          ++r_.resent;
        }
        window.push_back({o, now, dup ? 1 : 0});
        if (dup)
          window.push_back({o, now, 2});
        if (!e.empty())
          break; // the receive below reports the lost connection
        now = steady::now();
      }
      if (window.empty())
        return;
      inflight f = std::move(window.front());
      window.pop_front();
      outcome out = driver_->receive();
      now = steady::now();
      if (out.connection_lost) {
        // This request and every one behind it: outcome unknown.
        const bool counted = f.role != 2;
        if (counted)
          record(f.o, f.sent, now, out);
        if (f.o.kind == op::type::update)
          ++r_.unknown;
        for (auto& g : window) {
          if (g.role != 2)
            record(g.o, g.sent, now, out);
          if (g.o.kind == op::type::update && g.role != 2)
            ++r_.unknown;
        }
        window.clear();
        if (!reconnect())
          return;
        continue;
      }
      if (f.role == 2) {
        if (pair_ok || out.ok)
          credit(f.o);
        if (!out.ok)
          ++r_.errors["resend:" + out.error];
        continue;
      }
      record(f.o, f.sent, now, out);
      if (f.role == 1) {
        pair_ok = out.ok;
      } else if (out.ok && f.o.kind == op::type::update) {
        credit(f.o);
      }
    }
  }

  void run_interactive() {
    for (;;) {
      auto now = steady::now();
      if (!may_start(now))
        return;
      now = scheduled(now);
      op o = make_op();
      if (now >= s_.measure_start)
        ++started_measured_;
      if (o.dup)
        ++r_.resent;
      outcome out = driver_->transact(o);
      record(o, now, steady::now(), out);
      if (out.ok) {
        credit(o);
      } else if (out.connection_lost) {
        // A lost commit reply: the outcome is unknown.
        ++r_.unknown;
        if (!reconnect())
          return;
      }
    }
  }

  workload w_;
  shared_state& s_;
  unsigned index_;
  std::uint64_t quota_;
  std::uint64_t started_measured_ = 0;
  key_chooser keys_;
  ratio_mixer mixer_;
  std::mt19937_64 rng_;
  std::unique_ptr<driver> driver_;
  worker_result r_;
  std::uint64_t values_ = 0; // register values this worker assigned
  std::size_t cur_sec_ = 0;
  second_stats cur_;
  steady::time_point next_start_{}; // --rate: the next scheduled start
};

void progress_loop(shared_state& s, std::atomic<bool>& stop) {
  std::uint64_t last_done = 0;
  auto last = steady::now();
  while (!stop.load()) {
    for (int i = 0; i < 10 && !stop.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = steady::now();
    const std::uint64_t done = s.done.load();
    const double dt = std::chrono::duration<double>(now - last).count();
    const double elapsed = std::chrono::duration<double>(now - s.start).count();
    std::fprintf(stderr, "\r  %6.1f s  %10.0f ops/s  %8llu ops  %llu errors%s ",
                 elapsed, dt > 0 ? static_cast<double>(done - last_done) / dt : 0.0,
                 static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(s.errors.load()),
                 now < s.measure_start ? "  (warmup)" : "");
    std::fflush(stderr);
    last_done = done;
    last = now;
  }
  std::fprintf(stderr, "\r%78s\r", "");
}

/// Every key's value: counters in `counts`, sets and registers in `typed`
/// (for the exactly-once and read-back checks). Empty on success.
struct key_values {
  std::vector<std::int64_t> counts;
  std::vector<std::vector<std::string>> typed;
};
std::string read_all(const target& t, const workload& w, key_values& values) {
  auto d = make_driver(t, w, 0);
  if (auto e = d->connect(); !e.empty())
    return e;
  std::vector<std::uint64_t> keys(w.keys);
  for (std::uint64_t k = 0; k < w.keys; ++k)
    keys[k] = k;
  auto e = w.type == data_kind::counter ? d->read_values(keys, values.counts)
                                        : d->read_typed(keys, values.typed);
  d->close();
  return e;
}

// The read-back check of a set or register workload (readback.hpp).
void check_typed(const workload& w, const key_values& before, const key_values& after,
                 const std::unordered_map<std::uint64_t, set_marks>& sets,
                 const std::unordered_map<std::uint64_t, register_marks>& registers,
                 result& res) {
  static const set_marks no_set;
  static const register_marks no_register;
  for (std::uint64_t k = 0; k < w.keys; ++k) {
    const auto& b = before.typed.at(k);
    const auto& a = after.typed.at(k);
    std::string why;
    if (w.type == data_kind::set) {
      auto m = sets.find(k);
      why = check_set(b, a, m == sets.end() ? no_set : m->second, w.elements);
      res.items_after += a.size();
      res.keys_nonempty += a.empty() ? 0 : 1;
    } else {
      auto m = registers.find(k);
      const std::string vb = b.empty() ? std::string{} : b.front();
      const std::string va = a.empty() ? std::string{} : a.front();
      why = check_register(vb, va, m == registers.end() ? no_register : m->second);
      res.keys_nonempty += va.empty() ? 0 : 1;
    }
    if (why.empty())
      continue;
    if (res.keys_off++ == 0)
      res.first_off = bucket_of(w, k) + "/" + key_of(k) + ": " + why;
  }
}

/// Keys above this are not read back (the check would take too long).
constexpr std::uint64_t verify_key_limit = 1'000'000;

} // namespace

std::uint64_t result::total_errors() const {
  std::uint64_t n = 0;
  for (const auto& [kind, count] : errors)
    if (kind.rfind("resend:", 0) != 0)
      n += count;
  return n;
}

double result::relative_error() const {
  if (expected_sum == 0)
    return actual_sum == 0 ? 0.0 : 1.0;
  return static_cast<double>(actual_sum - expected_sum)
         / std::fabs(static_cast<double>(expected_sum));
}

result run(const target& t, const workload& w) {
  return run(std::vector<target>{t}, w);
}

result run(const std::vector<target>& nodes, const workload& w) {
  result res;
  if (nodes.empty()) {
    res.failed = true;
    res.failure = "no target";
    return res;
  }
  const target& t = nodes.front(); // the read-back's node
  res.target = targets_text(nodes);
  res.workload = describe(w);
  res.counters = w.type == data_kind::counter;
  for (const auto& n : nodes)
    if (n.protocol == target::kind::redis && w.type != data_kind::counter) {
      res.failed = true;
      res.failure = "redis:// targets run --type counter only (no set or register "
                    "workload for Redis)";
      return res;
    }
  const bool verify = w.verify && w.keys <= verify_key_limit;
  key_values before;
  if (verify) {
    if (auto e = read_all(t, w, before); !e.empty()) {
      res.failed = true;
      res.failure = e;
      return res;
    }
  } else {
    res.verify_note = w.verify ? "skipped: more than 1,000,000 keys"
                               : "skipped (--no-verify)";
  }

  shared_state s;
  const unsigned n = w.connections;
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned i = 0; i < n; ++i) {
    std::uint64_t quota = 0;
    if (w.ops)
      quota = *w.ops / n + (i < *w.ops % n ? 1 : 0);
    workers.push_back(
      std::make_unique<worker>(nodes[i % nodes.size()], w, i, s, quota));
  }
  std::vector<std::thread> threads;
  for (auto& wk : workers)
    threads.emplace_back([&wk] { wk->run(); });
  while (s.ready.load() < n)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s.start = steady::now();
  s.measure_start =
    s.start + std::chrono::duration_cast<steady::duration>(
                std::chrono::duration<double>(w.warmup_s));
  if (!w.ops)
    s.end = s.measure_start
            + std::chrono::duration_cast<steady::duration>(
              std::chrono::duration<double>(w.duration_s.value_or(10.0)));
  s.go = true;
  std::atomic<bool> stop_progress{false};
  std::thread progress;
  if (w.progress && ::isatty(2))
    progress = std::thread([&] { progress_loop(s, stop_progress); });
  for (auto& th : threads)
    th.join();
  const auto finished = steady::now();
  stop_progress = true;
  if (progress.joinable())
    progress.join();

  res.seconds = std::max(
    0.0, std::chrono::duration<double>(finished - s.measure_start).count());
  std::unordered_map<std::uint64_t, std::int64_t> expected;
  std::unordered_map<std::uint64_t, set_marks> sets;
  std::unordered_map<std::uint64_t, register_marks> registers;
  for (auto& wk : workers) {
    auto& r = wk->result();
    if (!r.failure.empty() && !res.failed) {
      res.failed = true;
      res.failure = r.failure;
    }
    for (unsigned i = 0; i < op_type_count; ++i) {
      res.ops[i] += r.ops[i];
      res.latency[i].merge(r.latency[i]);
    }
    for (auto& [k, c] : r.errors)
      res.errors[k] += c;
    res.resent += r.resent;
    res.unknown_updates += r.unknown;
    for (auto& [k, d] : r.expected)
      expected[k] += d;
    for (auto& [k, m] : r.sets)
      sets[k].merge(m);
    for (auto& [k, m] : r.registers)
      registers[k].merge(m);
  }
  auto it = res.errors.find("aborted");
  res.aborts = it == res.errors.end() ? 0 : it->second;
  res.timeline = std::move(s.timeline);

  if (verify) {
    key_values after;
    if (auto e = read_all(t, w, after); !e.empty()) {
      res.verify_note = "read-back failed: " + e;
    } else if (!res.counters) {
      res.verified = true;
      check_typed(w, before, after, sets, registers, res);
    } else {
      res.verified = true;
      for (std::uint64_t k = 0; k < w.keys; ++k) {
        const std::int64_t delta = after.counts[k] - before.counts[k];
        auto e2 = expected.find(k);
        const std::int64_t want = e2 == expected.end() ? 0 : e2->second;
        res.expected_sum += want;
        res.actual_sum += delta;
        if (delta != want)
          ++res.keys_off;
      }
    }
  }
  return res;
}

void print_table(std::FILE* out, const result& r) {
  std::fprintf(out, "target   %s\nworkload %s\n", r.target.c_str(),
               r.workload.c_str());
  if (r.failed) {
    std::fprintf(out, "FAILED: %s\n", r.failure.c_str());
    if (r.total_ops() == 0 && r.errors.empty())
      return;
  }
  std::fprintf(out, "measured %.2f s: %llu ops, %.1f ops/s, %llu errors\n\n",
               r.seconds, static_cast<unsigned long long>(r.total_ops()),
               r.throughput(), static_cast<unsigned long long>(r.total_errors()));
  std::fprintf(out, "%-7s %10s %11s %9s %9s %9s %9s %9s\n", "type", "ops",
               "ops/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms");
  for (unsigned t = 0; t < op_type_count; ++t) {
    if (r.ops[t] == 0)
      continue;
    const histogram& h = r.latency[t];
    std::fprintf(out, "%-7s %10llu %11.1f %9.3f %9.3f %9.3f %9.3f %9.3f\n",
                 to_string(static_cast<op::type>(t)),
                 static_cast<unsigned long long>(r.ops[t]),
                 r.seconds > 0 ? static_cast<double>(r.ops[t]) / r.seconds : 0.0,
                 ms(h.percentile(0.5)), ms(h.percentile(0.9)),
                 ms(h.percentile(0.99)), ms(h.percentile(0.999)), ms(h.max()));
  }
  std::fprintf(out, "\nerrors: ");
  if (r.errors.empty())
    std::fprintf(out, "none ");
  for (auto& [kind, count] : r.errors)
    std::fprintf(out, "%s=%llu ", kind.c_str(),
                 static_cast<unsigned long long>(count));
  std::fprintf(out, "(aborts %llu)\n", static_cast<unsigned long long>(r.aborts));
  if (r.verified && !r.counters) {
    std::fprintf(out, "read-back: %llu of the keys off, %llu keys non-empty",
                 static_cast<unsigned long long>(r.keys_off),
                 static_cast<unsigned long long>(r.keys_nonempty));
    if (r.items_after)
      std::fprintf(out, ", %llu elements in all",
                   static_cast<unsigned long long>(r.items_after));
    std::fprintf(out, " (%llu updates resent)\n", static_cast<unsigned long long>(r.resent));
    if (r.keys_off)
      std::fprintf(out, "first key off: %s\n", r.first_off.c_str());
  } else if (r.verified) {
    std::fprintf(out,
                 "exactly-once: expected sum %lld, actual %lld, relative error "
                 "%.6f (%llu of the keys off; %llu updates resent",
                 static_cast<long long>(r.expected_sum),
                 static_cast<long long>(r.actual_sum), r.relative_error(),
                 static_cast<unsigned long long>(r.keys_off),
                 static_cast<unsigned long long>(r.resent));
    if (r.unknown_updates)
      std::fprintf(out, "; %llu updates of unknown outcome",
                   static_cast<unsigned long long>(r.unknown_updates));
    std::fprintf(out, ")\n");
  } else {
    std::fprintf(out, "exactly-once: %s\n", r.verify_note.c_str());
  }
}

std::string csv_text(const result& r) {
  std::string s = "second";
  for (unsigned t = 0; t < op_type_count; ++t) {
    std::string n = to_string(static_cast<op::type>(t));
    s += "," + n + "_ops," + n + "_p50_ms," + n + "_p99_ms";
  }
  s += ",errors\n";
  char buf[64];
  for (std::size_t i = 0; i < r.timeline.size(); ++i) {
    const auto& sec = r.timeline[i];
    s += std::to_string(i + 1);
    for (unsigned t = 0; t < op_type_count; ++t) {
      std::snprintf(buf, sizeof buf, ",%llu,%.3f,%.3f",
                    static_cast<unsigned long long>(sec.ops[t]),
                    ms(sec.latency[t].percentile(0.5)),
                    ms(sec.latency[t].percentile(0.99)));
      s += buf;
    }
    s += "," + std::to_string(sec.errors) + "\n";
  }
  return s;
}

std::string write_csv(const std::string& path, const result& r) {
  std::ofstream f(path);
  f << csv_text(r);
  f.close();
  if (!f)
    return "cannot write " + path;
  return {};
}

std::string write_svg(const std::string& path, const result& r) {
  report::chart c;
  c.title = "tally-bench run: " + r.target;
  c.x_label = "second";
  c.y_label = "ops/s";
  c.y2_label = "latency ms";
  report::series tp;
  tp.name = "throughput (ops/s)";
  for (std::size_t i = 0; i < r.timeline.size(); ++i) {
    const auto& sec = r.timeline[i];
    tp.x.push_back(static_cast<double>(i + 1));
    tp.y.push_back(static_cast<double>(sec.ops[0] + sec.ops[1] + sec.ops[2]));
  }
  c.lines.push_back(tp);
  for (unsigned t = 0; t < op_type_count; ++t) {
    if (r.ops[t] == 0)
      continue;
    for (int q = 0; q < 2; ++q) {
      report::series l;
      l.name = std::string(to_string(static_cast<op::type>(t)))
               + (q ? " p99 ms" : " p50 ms");
      l.secondary_axis = true;
      l.dashed = q == 1;
      l.markers = false;
      for (std::size_t i = 0; i < r.timeline.size(); ++i) {
        const auto& h = r.timeline[i].latency[t];
        if (h.count() == 0)
          continue;
        l.x.push_back(static_cast<double>(i + 1));
        l.y.push_back(ms(h.percentile(q ? 0.99 : 0.5)));
      }
      c.lines.push_back(l);
    }
  }
  std::ofstream f(path);
  f << report::render_svg(c);
  f.close();
  if (!f)
    return "cannot write " + path;
  return {};
}

std::vector<std::pair<std::string, double>> figures(const result& r) {
  std::vector<std::pair<std::string, double>> f;
  f.push_back({"throughput ops/s", r.throughput()});
  for (unsigned t = 0; t < op_type_count; ++t) {
    if (r.ops[t] == 0)
      continue;
    std::string n = to_string(static_cast<op::type>(t));
    f.push_back({n + " ops/s", r.seconds > 0 ? static_cast<double>(r.ops[t]) / r.seconds : 0});
    f.push_back({n + " p50 ms", ms(r.latency[t].percentile(0.5))});
    f.push_back({n + " p99 ms", ms(r.latency[t].percentile(0.99))});
    f.push_back({n + " p99.9 ms", ms(r.latency[t].percentile(0.999))});
  }
  f.push_back({"errors", static_cast<double>(r.total_errors())});
  if (r.verified && r.counters)
    f.push_back({"exactly-once rel. error", r.relative_error()});
  else if (r.verified)
    f.push_back({"read-back keys off", static_cast<double>(r.keys_off)});
  return f;
}

namespace {
double median_of(std::vector<double> v) {
  if (v.empty())
    return std::nan("");
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
} // namespace

void print_comparison(std::FILE* out, const target& a, const target& b,
                      const std::vector<result>& ra,
                      const std::vector<result>& rb) {
  // Figure names in A's order, then B's extra ones.
  std::vector<std::string> names;
  auto add_names = [&](const std::vector<result>& rs) {
    for (const auto& r : rs)
      for (const auto& [n, v] : figures(r))
        if (std::find(names.begin(), names.end(), n) == names.end())
          names.push_back(n);
  };
  add_names(ra);
  add_names(rb);
  auto med = [](const std::vector<result>& rs, const std::string& name) {
    std::vector<double> v;
    for (const auto& r : rs)
      for (const auto& [n, x] : figures(r))
        if (n == name)
          v.push_back(x);
    return median_of(v);
  };
  std::fprintf(out, "\nmedian of %zu rounds   A = %s   B = %s\n", ra.size(),
               a.text.c_str(), b.text.c_str());
  std::fprintf(out, "%-26s %14s %14s %10s\n", "figure", "A", "B", "A/B");
  for (const auto& n : names) {
    const double x = med(ra, n), y = med(rb, n);
    char ratio[32] = "-";
    if (std::isfinite(x) && std::isfinite(y) && y != 0)
      std::snprintf(ratio, sizeof ratio, "%.3f", x / y);
    std::fprintf(out, "%-26s %14.4g %14.4g %10s\n", n.c_str(), x, y, ratio);
  }
}

} // namespace tally::load
