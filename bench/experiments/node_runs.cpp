#include "bench/experiments/node_runs.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "bench/experiments/rng.hpp"
#include "client/client.hpp"
#include "client/connection.hpp"
#include "protocol/descriptor.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"

namespace tally::experiments {

namespace {

using steady = std::chrono::steady_clock;

// A static update of +1 on each of `keys`, each with an op id <client, ++seq>
// or without one, as frame bytes.
expected<std::string> increment_frame(const std::vector<object_key>& keys,
                                      const std::vector<bool>& with_id,
                                      std::uint64_t client, std::uint64_t& seq) {
  static_update_objects_req req;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    counter_op c;
    c.update.delta = 1;
    if (with_id[i])
      c.id = op_id{client, ++seq};
    req.updates.push_back({bound_object{keys[i], crdt_type::counter}, c});
  }
  return encode_frame(encode_request(req));
}

// The commit clock of a committed static update, or why it is not one.
expected<std::string> commit_of(const frame& f) {
  auto r = decode_response(f.code, f.body);
  if (!r)
    return r.err();
  if (auto* e = std::get_if<error_resp>(&*r))
    return e->err;
  if (auto* c = std::get_if<commit_resp>(&*r)) {
    if (!c->success)
      return make_error(errc_from_wire_error(c->error_code), "the commit failed");
    return c->commit_time;
  }
  return make_error(errc::corrupt, "not a commit reply");
}

// One request's outcome: the commit clock or the failure; whether its bytes
// reached a node; and whether a failure leaves it unknown if the request was
// applied (anything but a copy's refusal to take a write it does not lead).
struct attempt {
  expected<std::string> commit;
  bool written = false;
  bool maybe_applied = false;
};

// One request on `conn` (opened to `port` if closed).
attempt exchange(std::optional<connection>& conn, std::uint16_t port,
                 const std::string& bytes, std::chrono::milliseconds timeout) {
  if (!conn || !conn->is_open()) {
    auto c = connection::open("127.0.0.1", port, timeout);
    if (!c)
      return {c.err(), false};
    conn.emplace(std::move(*c));
  }
  if (auto st = conn->send_bytes(bytes, steady::now() + timeout); !st)
    return {st.err(), true, true}; // part of it may have been written
  auto f = conn->receive(steady::now() + timeout);
  if (!f)
    return {f.err(), true, true};
  auto commit = commit_of(*f);
  // The one answer known to come before anything is applied: a copy that
  // does not lead refuses the write (partition_replication::refusal, "...:
  // this copy is a replica ..."). Any other failure (a timeout, a partition
  // that did not answer, "its outcome is unknown") may follow an apply.
  const bool refused =
      !commit && commit.err().message().find(": this copy is ") != std::string::npos;
  return {std::move(commit), true, !commit && !refused};
}

} // namespace

// --- Fig. 15 ----------------------------------------------------------------

expected<std::vector<batch_latency_round>> run_batch_latency(const batch_latency_params& p) {
  auto cluster = tallyd_cluster::start(p.cluster);
  if (!cluster)
    return cluster.err();
  std::vector<object_key> keys;
  for (std::uint32_t i = 0; i < p.batch; ++i)
    keys.push_back(object_key{"fbf-latency", "k" + std::to_string(i)});
  const std::vector<bool> ids_on(keys.size(), true), ids_off(keys.size(), false);
  std::uint64_t seq = 0;
  const std::uint64_t client = std::random_device{}() | 1ull << 40;
  std::optional<connection> conn;
  // One batch: its latency in ms; the frame is built before the clock starts.
  auto one = [&](bool with_ids) -> expected<double> {
    auto bytes = increment_frame(keys, with_ids ? ids_on : ids_off, client, seq);
    if (!bytes)
      return bytes.err();
    const auto t0 = steady::now();
    auto r = exchange(conn, cluster->port(0), *bytes, p.timeout).commit;
    const auto t1 = steady::now();
    if (!r)
      return make_error(r.err().code(), std::string("a batch of ") + (with_ids ? "" : "no ")
                                            + "op ids failed: " + r.err().message());
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };
  std::vector<batch_latency_round> out;
  for (std::uint32_t round = 0; round < p.rounds; ++round) {
    batch_latency_round r;
    for (std::uint32_t i = 0; i < p.warmup_pairs + p.pairs_per_round; ++i) {
      const bool ids_first = i % 2 == 0; // A B, B A, ...: neither always goes first
      for (int half = 0; half < 2; ++half) {
        const bool with_ids = (half == 0) == ids_first;
        auto ms = one(with_ids);
        if (!ms)
          return ms.err();
        if (i >= p.warmup_pairs)
          (with_ids ? r.with_ids_ms : r.without_ids_ms).push_back(*ms);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// --- Fig. 14, failover ------------------------------------------------------

expected<counter_failover_result> run_counter_failover(const counter_failover_params& p) {
  auto cluster = tallyd_cluster::start(p.cluster);
  if (!cluster)
    return cluster.err();
  const std::uint32_t parts = p.cluster.partitions;
  // One pair of counters per partition, both keys on that partition: a
  // request is a one-step commit on one copy set.
  const auto gated = one_key_per_partition("fbf-failover", "with-op-ids-", parts);
  const auto plain = one_key_per_partition("fbf-failover", "without-op-ids-", parts);
  const std::vector<bool> which{true, false};
  std::vector<std::uint16_t> ports;
  for (std::size_t i = 0; i < cluster->size(); ++i)
    ports.push_back(cluster->port(i));

  std::mutex mu; // guards result's counters, clocks and first_failure
  counter_failover_result result;
  std::vector<std::string> clocks;
  std::atomic<std::uint64_t> acked_ops{0};
  std::optional<error> worker_error;
  const auto load_start = steady::now();

  auto worker = [&](std::uint32_t w) {
    rng gen(derive_seed(p.seed, 0xfa11, w));
    const std::uint64_t client = derive_seed(p.seed, 0xc11e, w) | 1;
    std::uint64_t seq = 0;
    std::size_t at = w % ports.size();
    std::optional<connection> conn;
    std::uint64_t sent = 0, sent_acked = 0, unknown = 0, retries = 0, resends = 0, acked = 0;
    std::string first_failure;
    std::vector<std::string> my_clocks;
    std::vector<double> op_acks, req_acks;
    auto since_start = [&] {
      return std::chrono::duration<double>(steady::now() - load_start).count();
    };
    // Sends `bytes` until a node commits it or retry_limit passes; a failed
    // attempt moves to the next node. True when acknowledged.
    auto until_acked = [&](const std::string& bytes) {
      const auto start = steady::now();
      for (bool first = true;; first = false) {
        if (!first) {
          ++retries;
          conn.reset();
          at = (at + 1) % ports.size();
        }
        auto [r, written, maybe] = exchange(conn, ports[at], bytes, p.attempt_timeout);
        sent += written ? 1 : 0;
        unknown += maybe ? 1 : 0;
        if (r) {
          ++sent_acked;
          req_acks.push_back(since_start());
          my_clocks.push_back(*r);
          return true;
        }
        if (first_failure.empty())
          first_failure = "node " + std::to_string(at) + ": " + r.err().to_string();
        if (steady::now() - start > p.retry_limit)
          return false;
        // A node that answered (a copy that does not lead yet, say) is not
        // asked again at once: the next attempt waits a little.
        if (written && !maybe)
          std::this_thread::sleep_for(std::chrono::milliseconds{10});
      }
    };
    for (std::uint32_t i = 0; i < p.ops_per_worker; ++i) {
      const auto part = static_cast<std::size_t>(gen.below(parts));
      auto bytes = increment_frame({gated[part], plain[part]}, which, client, seq);
      if (!bytes) {
        std::lock_guard<std::mutex> g{mu};
        worker_error = bytes.err();
        return;
      }
      if (!until_acked(*bytes))
        continue;
      ++acked;
      ++acked_ops;
      op_acks.push_back(req_acks.back());
      if (p.resend_every > 0 && (i + 1) % p.resend_every == 0) {
        // The acknowledgement was "lost": the client sends it again, through
        // the next node, with the same op id.
        ++resends;
        conn.reset();
        at = (at + 1) % ports.size();
        until_acked(*bytes);
      }
    }
    std::lock_guard<std::mutex> g{mu};
    result.operations += p.ops_per_worker;
    result.acknowledged += acked;
    result.sent += sent;
    result.sent_acknowledged += sent_acked;
    result.sent_unknown += unknown;
    result.failover_retries += retries;
    result.lost_ack_resends += resends;
    if (result.first_failure.empty())
      result.first_failure = first_failure;
    clocks.insert(clocks.end(), my_clocks.begin(), my_clocks.end());
    result.operation_acks_s.insert(result.operation_acks_s.end(), op_acks.begin(),
                                   op_acks.end());
    result.request_acks_s.insert(result.request_acks_s.end(), req_acks.begin(),
                                 req_acks.end());
  };

  std::vector<std::thread> threads;
  for (std::uint32_t w = 0; w < p.workers; ++w)
    threads.emplace_back(worker, w);
  // The crash: once kill_after operations are acknowledged (bounded: at most
  // the load's whole run).
  const std::uint64_t total_ops = std::uint64_t{p.workers} * p.ops_per_worker;
  const std::uint64_t kill_at = std::min<std::uint64_t>(p.kill_after, total_ops);
  const auto kill_deadline = steady::now() + std::chrono::minutes{2};
  while (acked_ops.load() < kill_at && steady::now() < kill_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  result.acknowledged_before_kill = acked_ops.load();
  cluster->kill(p.kill_node);
  result.kill_at_s = std::chrono::duration<double>(steady::now() - load_start).count();
  for (auto& t : threads)
    t.join();
  result.load_s = std::chrono::duration<double>(steady::now() - load_start).count();
  std::sort(result.operation_acks_s.begin(), result.operation_acks_s.end());
  std::sort(result.request_acks_s.begin(), result.request_acks_s.end());
  if (worker_error)
    return *worker_error;
  if (result.acknowledged_before_kill < kill_at)
    return make_error(errc::timeout, "the load did not reach " + std::to_string(kill_at)
                                         + " acknowledged operations in 2 minutes");

  // Read both sums through a survivor at a snapshot at least every
  // acknowledged commit's (bounded: the failover may still be settling).
  std::optional<vector_clock> joined;
  for (const auto& c : clocks)
    if (auto v = decode_clock(c)) {
      if (joined)
        joined->merge(*v);
      else
        joined = *v;
    }
  std::vector<bound_object> objects;
  for (const auto& k : gated)
    objects.push_back({k, crdt_type::counter});
  for (const auto& k : plain)
    objects.push_back({k, crdt_type::counter});
  const std::size_t survivor = p.kill_node == 0 ? 1 : 0;
  std::string why;
  const auto deadline = steady::now() + std::chrono::seconds{30};
  for (;;) {
    client_options o;
    o.port = cluster->port(survivor);
    o.timeout = std::chrono::milliseconds{3000};
    auto c = client::connect(o);
    auto r = c ? c->read(objects, joined ? std::optional<std::string>(encode_clock(*joined))
                                         : std::nullopt)
               : expected<read_result>{c.err()};
    if (r) {
      for (std::size_t i = 0; i < parts; ++i) {
        result.with_op_ids += r->values[i];
        result.without_op_ids += r->values[parts + i];
      }
      return result;
    }
    why = r.err().to_string();
    if (steady::now() > deadline)
      return make_error(errc::unavailable, "cannot read the counters back through node "
                                               + std::to_string(survivor) + ": " + why);
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
}

} // namespace tally::experiments
