// The chaos suite's workload (issue 13; docs/RELIABILITY.md): client
// sessions that drive real nodes and record what they invoked and what came
// back (history.hpp), for the single-node run (chaos_test.cpp) and the
// cluster runs (cluster_chaos_test.cpp).
//
// Each session picks, from its own seeded generator (TALLY_TEST_SEED
// replays the choices; the timing of faults is the machine's): 40% counter
// increments (+1..3, with op ids), 10% static pair transactions, 10%
// interactive ones (start, update, commit), 40% static reads of every key
// at one snapshot. Writes are retried with the same op ids over new
// connections until acknowledged or until 4 s after the first send, like
// the client library's defaults (a 1 s timeout per request, resends within
// `client_options::retry_window()` = 4 s, inside the node's FBF retry
// timeout of 5 s: docs/CLIENT.md, "The retry window must be shorter than
// the node's FBF window"; a resend after it could be applied twice by
// contract). A request without an answer within 1 s is a failed attempt
// (its operation's outcome is then unknown until a resend is
// acknowledged). Sessions send no clock: the node's per-connection session floor must give read-your-writes
// and monotonic reads. A reconnect starts a new session (the floor lives
// with the connection); in a cluster it goes to another node, picked at
// random, as a client that fails over would.
//
// Worker threads make no Boost.Test call (wire_client, history).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clock/vector_clock.hpp"
#include "protocol/descriptor.hpp"
#include "tests/actors/node_process_support.hpp"
#include "tests/chaos/history.hpp"

namespace tally::chaos {

using steady = std::chrono::steady_clock;

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
    std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count());
}

/// The keys of a run, all in bucket "chaos": counters incremented alone,
/// and pairs (x, y) that only change together.
struct workload_keys {
  std::vector<std::string> counters;
  std::vector<std::pair<std::string, std::string>> pairs;

  std::vector<std::string> all() const {
    auto out = counters;
    for (const auto& [x, y] : pairs) {
      out.push_back(x);
      out.push_back(y);
    }
    return out;
  }
};

inline update_op counter_inc(const std::string& k, std::int64_t d, op_id id) {
  return update_op{bound_object{object_key{"chaos", k}, crdt_type::counter},
                   counter_op{counter_update{d}, id}};
}

inline static_read_objects_req read_all(const workload_keys& keys,
                                        std::optional<std::string> clock = std::nullopt) {
  static_read_objects_req r;
  r.transaction.timestamp = std::move(clock);
  for (const auto& k : keys.all())
    r.objects.push_back(bound_object{object_key{"chaos", k}, crdt_type::counter});
  return r;
}

inline bool acked(const std::optional<response>& r) {
  auto* c = r ? std::get_if<commit_resp>(&*r) : nullptr;
  return c && c->success;
}

/// Why an answer `r` (nullopt: none; the client's `last_error` says why)
/// is not a success, for the history of failed attempts.
inline std::string failure_of(const std::optional<response>& r, const std::string& last_error) {
  if (!r)
    return "no answer: " + last_error;
  if (auto* e = std::get_if<error_resp>(&*r))
    return e->err.to_string();
  if (auto* c = std::get_if<commit_resp>(&*r))
    return "commit failed, code " + std::to_string(c->error_code);
  if (auto* o = std::get_if<operation_resp>(&*r))
    return "update failed, code " + std::to_string(o->error_code);
  if (auto* t = std::get_if<start_transaction_resp>(&*r))
    return "start failed, code " + std::to_string(t->error_code);
  return "unexpected answer";
}

/// A client clock at this machine's wall clock now (the nodes' clocks on
/// 127.0.0.1): a read at it sees every update acknowledged before.
inline std::string clock_now() {
  vector_clock v;
  v.set(1, static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count()));
  return encode_clock(v);
}

/// The values of every key from one static read through the node on
/// `port` (at `clock`, or without a clock: at the node's stable time);
/// empty when the read failed (`why` says how).
inline std::map<std::string, std::int64_t>
read_values(std::uint16_t port, const workload_keys& keys, std::string& why,
            std::optional<std::string> clock = std::nullopt) {
  std::map<std::string, std::int64_t> out;
  test::wire_client c{port};
  auto r = c.call(read_all(keys, std::move(clock)));
  auto* s = r ? std::get_if<static_read_objects_resp>(&*r) : nullptr;
  if (!s || !s->objects.success) {
    why = r ? (std::holds_alternative<error_resp>(*r) ? std::get<error_resp>(*r).err.to_string()
                                                       : std::string("read not successful"))
            : c.last_error;
    return out;
  }
  auto names = keys.all();
  for (std::size_t i = 0; i < names.size() && i < s->objects.values.size(); ++i)
    out[names[i]] = std::get<std::int64_t>(s->objects.values[i]);
  return out;
}

/// The client ports of the nodes (a restart moves a node's port).
class node_ports {
public:
  explicit node_ports(std::size_t n) : ports_(new std::atomic<std::uint16_t>[n]), n_(n) {
    for (std::size_t i = 0; i < n; ++i)
      ports_[i] = 0;
  }
  std::size_t size() const { return n_; }
  std::uint16_t get(std::size_t i) const { return ports_[i].load(); }
  void set(std::size_t i, std::uint16_t p) { ports_[i] = p; }

private:
  std::unique_ptr<std::atomic<std::uint16_t>[]> ports_;
  std::size_t n_;
};

/// How long a request waits for its answer, and how long after an
/// update's first send it may still be resent (docs/CLIENT.md).
constexpr std::chrono::milliseconds request_timeout{1000};
constexpr std::chrono::milliseconds retry_window{4000};

/// What one session runner recorded.
struct session_log {
  history ops;
  std::vector<attempt_record> attempts;
};

// One client session after another (a reconnect is a new session), from
// thread start until `stopping` is set. Session `index` starts on node
// index % nodes.
class session_runner {
public:
  session_runner(int index, std::uint64_t seed, const node_ports& ports,
                 const workload_keys& keys, const std::atomic<bool>& stopping)
      : index_(index), rng_(seed ^ (0x9E3779B97F4A7C15ULL * std::uint64_t(index + 1))),
        ports_(ports), keys_(keys), stopping_(stopping),
        node_(index % static_cast<int>(ports.size())) {}

  session_log run() {
    connect(-1);
    while (!stopping_) {
      auto pick = rng_() % 10;
      if (pick < 4)
        write(op_kind::inc);
      else if (pick < 5)
        write(op_kind::pair);
      else if (pick < 6)
        write(op_kind::pair_interactive);
      else
        read();
    }
    return std::move(log_);
  }

private:
  // A new connection (a new session): to the home node first, after a
  // failure to another node than `failed` (one node: the same again).
  void connect(int failed) {
    ++session_;
    const int n = static_cast<int>(ports_.size());
    for (int i = 0; i < 200; ++i) { // bounded: a restart takes well under 10 s
      if (failed >= 0 && n > 1) {
        node_ = static_cast<int>(rng_() % std::uint64_t(n - 1));
        if (node_ >= failed)
          ++node_;
      }
      client_ = test::wire_client{ports_.get(std::size_t(node_))};
      if (client_.connected()) {
        client_.set_receive_timeout(request_timeout);
        return;
      }
      if (failed < 0)
        failed = node_;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  int session_id() const { return index_ * 1000 + session_; }

  void attempt(std::uint64_t invoked, bool ok, std::string why = {}) {
    log_.attempts.push_back(attempt_record{node_, invoked, now_ns(), ok, std::move(why)});
  }

  // An update, retried with the same op ids over new connections until
  // acknowledged (or the time is up): its outcome is ok, or unknown.
  void write(op_kind kind) {
    op_record op;
    op.kind = kind;
    op.delta = static_cast<std::int64_t>(1 + rng_() % 3);
    static_update_objects_req req;
    const auto client_id = std::uint64_t(100 + index_);
    if (kind == op_kind::inc) {
      op.keys = {keys_.counters[rng_() % keys_.counters.size()]};
      req.updates = {counter_inc(op.keys[0], op.delta, op_id{client_id, ++seq_})};
    } else {
      const auto& [x, y] = keys_.pairs[rng_() % keys_.pairs.size()];
      op.keys = {x, y};
      req.updates = {counter_inc(x, op.delta, op_id{client_id, ++seq_}),
                     counter_inc(y, op.delta, op_id{client_id, ++seq_})};
    }
    op.session = session_id();
    op.invoke_ns = now_ns();
    // Resent only within the retry window (and at most 50 times).
    const auto give_up = steady::now() + retry_window;
    for (int tries = 0; tries < 50 && steady::now() < give_up; ++tries) {
      if (tries > 0) // back off: 10, 20, 40, 80, then 160 ms between resends
        std::this_thread::sleep_for(std::chrono::milliseconds(10 << std::min(tries - 1, 4)));
      auto sent = now_ns();
      std::string why;
      bool done = false;
      if (kind == op_kind::pair_interactive) {
        done = interactive(req.updates, why);
      } else {
        auto r = client_.call(req);
        done = acked(r);
        if (!done)
          why = failure_of(r, client_.last_error);
      }
      attempt(sent, done, std::move(why));
      if (done) {
        op.result = outcome::ok;
        break;
      }
      // No answer or an error: it may or may not have been applied; the
      // retry carries the same op ids, so it cannot be applied twice.
      op.result = outcome::unknown;
      client_.close();
      connect(node_);
    }
    op.complete_ns = now_ns();
    log_.ops.push_back(std::move(op));
  }

  // One interactive transaction with `ups` (no client clock: the
  // connection's session floor applies); true when its commit was
  // acknowledged. A retry runs it again with the same op ids.
  bool interactive(const std::vector<update_op>& ups, std::string& why) {
    auto s = client_.call(start_transaction_req{});
    auto* st = s ? std::get_if<start_transaction_resp>(&*s) : nullptr;
    if (!st || !st->success) {
      why = "start: " + failure_of(s, client_.last_error);
      return false;
    }
    auto u = client_.call(update_objects_req{ups, st->transaction_descriptor});
    auto* ok = u ? std::get_if<operation_resp>(&*u) : nullptr;
    if (!ok || !ok->success) {
      why = "update: " + failure_of(u, client_.last_error);
      return false;
    }
    auto c = client_.call(commit_transaction_req{st->transaction_descriptor});
    if (acked(c))
      return true;
    why = "commit: " + failure_of(c, client_.last_error);
    return false;
  }

  void read() {
    op_record op;
    op.kind = op_kind::read;
    op.keys = keys_.all();
    op.session = session_id();
    op.invoke_ns = now_ns();
    auto r = client_.call(read_all(keys_));
    auto* s = r ? std::get_if<static_read_objects_resp>(&*r) : nullptr;
    if (s && s->objects.success) {
      op.result = outcome::ok;
      for (const auto& v : s->objects.values)
        op.values.push_back(std::get<std::int64_t>(v));
      attempt(op.invoke_ns, true);
    } else {
      op.result = r && std::holds_alternative<error_resp>(*r) ? outcome::failed : outcome::unknown;
      attempt(op.invoke_ns, false, "read: " + failure_of(r, client_.last_error));
      client_.close();
      connect(node_);
    }
    op.complete_ns = now_ns();
    log_.ops.push_back(std::move(op));
  }

  int index_;
  std::mt19937_64 rng_;
  const node_ports& ports_;
  const workload_keys& keys_;
  const std::atomic<bool>& stopping_;
  int node_;
  test::wire_client client_;
  int session_ = 0;
  std::uint64_t seq_ = 0;
  session_log log_;
};

/// Every session's operations in one history, and their attempts.
inline session_log merge(std::vector<session_log>& logs) {
  session_log all;
  for (auto& l : logs) {
    for (auto& op : l.ops)
      all.ops.push_back(std::move(op));
    all.attempts.insert(all.attempts.end(), l.attempts.begin(), l.attempts.end());
  }
  return all;
}

/// The violations every checker of history.hpp finds in `ops`, given the
/// final value of every key.
inline std::vector<violation> check_all(const history& ops, const workload_keys& keys,
                                        const std::map<std::string, std::int64_t>& final_values) {
  std::vector<violation> found;
  for (auto& v : check_counter_bounds(ops, final_values))
    found.push_back(v);
  for (auto& v : check_pair_atomicity(ops, keys.pairs))
    found.push_back(v);
  for (auto& v : check_sessions(ops))
    found.push_back(v);
  return found;
}

} // namespace tally::chaos
