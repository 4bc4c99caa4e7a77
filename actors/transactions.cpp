#include "actors/transactions.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include <sys/random.h>
#include <optional>
#include <utility>

#include "actors/node_context.hpp"
#include "actors/partition_calls.hpp"
#include "common/log.hpp"
#include "protocol/descriptor.hpp"
#include "ring/partition.hpp"

namespace tally {

std::uint64_t stable_time(const node_context& ctx) {
  std::uint64_t t = wall_clock_us();
  if (ctx.board)
    for (const auto& b : ctx.board->blocked_from)
      t = std::min(t, b.load(std::memory_order_acquire) - 1);
  return t;
}

expected<std::uint64_t> snapshot_for(const node_context& ctx,
                                     const start_transaction_req& start) {
  std::uint64_t t = stable_time(ctx);
  if (start.timestamp) {
    auto c = decode_clock(*start.timestamp);
    if (!c)
      return c.err();
    t = std::max(t, c->get(local_dc));
  }
  return t;
}

expected<std::map<std::uint32_t, std::vector<tx_update>>>
updates_by_partition(std::uint32_t q, const std::vector<update_op>& updates) {
  std::map<std::uint32_t, std::vector<tx_update>> out;
  for (const auto& u : updates) {
    if (auto ok = check_supported(u); !ok)
      return ok.err();
    const auto* op = std::get_if<counter_op>(&u.op);
    if (!op)
      return make_error(errc::invalid_argument,
                        "a " + std::string{to_string(u.object.type)}
                          + " update needs its object read first (prepare_writes)");
    auto p = partition_for(u.object.key.bucket, u.object.key.key, q);
    if (!p)
      return p.err();
    out[*p].push_back(tx_update{u.object.key, u.object.type,
                                counter_effect{op->update.delta}, op->id});
  }
  return out;
}

tx_id next_static_tx_id(const node_context& ctx) {
  static std::atomic<std::uint64_t> seq{~std::uint64_t{0}};
  return tx_id{ctx.incarnation, seq.fetch_sub(1, std::memory_order_relaxed)};
}

std::string clock_bytes(std::uint64_t t) {
  return encode_clock(vector_clock{{local_dc, t}});
}

namespace {

// Answers from several partitions, gathered under a mutex; `last()` is
// true for exactly one caller, the one that brought the final answer.
template <class T>
struct gather {
  std::mutex mu;
  std::size_t left = 0;
  std::optional<error> err;
  T acc{};

  template <class F>
  bool add(std::optional<error> e, F&& fold) {
    std::lock_guard<std::mutex> g{mu};
    if (e && !err)
      err = std::move(e);
    else if (!e)
      fold(acc);
    return --left == 0;
  }
};

} // namespace

std::uint64_t random_u64() {
  // Drawn 32 at a time, per thread: one getrandom() call per 32 values
  // instead of one per interactive transaction (docs/PERFORMANCE.md,
  // "Transactions: where their CPU goes"). Each value is still 64 bits of
  // the kernel's CSPRNG, handed out once and then wiped from the pool.
  thread_local std::array<std::uint64_t, 32> pool{};
  thread_local std::size_t left = 0;
  if (left == 0) {
    auto* bytes = reinterpret_cast<char*>(pool.data());
    for (std::size_t got = 0; got < sizeof pool;) {
      auto n = ::getrandom(bytes + got, sizeof pool - got, 0);
      if (n > 0)
        got += static_cast<std::size_t>(n);
      else if (errno != EINTR)
        std::abort(); // no entropy source: nothing safe to hand out
    }
    left = pool.size();
  }
  const auto v = pool[--left];
  pool[left] = 0;
  return v;
}

token_source next_token_source() {
  // One random origin per process (a new one at every restart), and a block
  // of 2^32 sequence numbers per prepared request: tokens never repeat
  // within the process, and two processes share an origin with probability
  // about n^2 / 2^65 for n processes ever started.
  static const std::uint64_t origin = random_u64();
  static std::atomic<std::uint64_t> block{0};
  return token_source{origin, block.fetch_add(1, std::memory_order_relaxed) << 32};
}

namespace {

struct read_result {
  std::vector<crdt_value> values;
  std::vector<std::string> states;
};

// read_at, optionally with the objects themselves (want_state).
void read_objects_at(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                     std::uint64_t snapshot, const std::vector<bound_object>& objects,
                     const own_effects& own, bool want_state,
                     std::function<void(expected<read_result>)> done) {
  std::map<std::uint32_t, std::pair<part_read_req, std::vector<std::size_t>>> by_part;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto& o = objects[i];
    if (auto ok = check_supported(o); !ok)
      return done(ok.err());
    auto p = partition_for(o.key.bucket, o.key.key, ctx->q);
    if (!p)
      return done(p.err());
    auto& slot = by_part[*p];
    slot.first.snapshot = vector_clock{{local_dc, snapshot}};
    slot.first.items.push_back(read_item{
      o.key, o.type, own ? own(o.key) : std::vector<crdt_effect>{}, want_state});
    slot.second.push_back(i);
  }
  if (by_part.empty())
    return done(read_result{});
  auto g = std::make_shared<gather<read_result>>();
  g->acc.values.resize(objects.size());
  g->acc.states.resize(objects.size());
  g->left = by_part.size();
  // One `done` for every partition's answer, shared: a copy per partition
  // copied what it holds (prepare_writes: the request's updates, a whole
  // ~166 MB batch 64 times over, most of a minute of memmove).
  auto finish = std::make_shared<std::function<void(expected<read_result>)>>(std::move(done));
  for (auto& [p, slot] : by_part)
    call_read(sys, *ctx, p, std::move(slot.first),
              [g, finish, idx = std::move(slot.second)](part_read_resp r) {
                bool last = g->add(std::move(r.err), [&](read_result& acc) {
                  for (std::size_t j = 0; j < idx.size() && j < r.values.size(); ++j) {
                    acc.values[idx[j]] = std::move(r.values[j]);
                    if (j < r.states.size())
                      acc.states[idx[j]] = std::move(r.states[j]);
                  }
                });
                if (!last)
                  return;
                if (g->err)
                  (*finish)(*g->err);
                else
                  (*finish)(std::move(g->acc));
              });
}

} // namespace

void read_at(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
             std::uint64_t snapshot, const std::vector<bound_object>& objects,
             const own_effects& own,
             std::function<void(expected<std::vector<crdt_value>>)> done) {
  read_objects_at(sys, std::move(ctx), snapshot, objects, own, false,
                  [done](expected<read_result> r) {
                    if (!r)
                      done(r.err());
                    else
                      done(std::move(r->values));
                  });
}

void prepare_writes(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                    std::uint64_t snapshot, std::vector<update_op> updates,
                    const own_effects& own,
                    std::function<void(expected<writes_by_partition>)> done) {
  // Validated first, nothing read on an error: served types, one type per
  // key, and the objects that need their state.
  std::vector<bound_object> need;
  std::map<object_key, std::size_t> slot;
  std::map<object_key, crdt_type> types;
  for (const auto& u : updates) {
    if (auto ok = check_supported(u); !ok)
      return done(ok.err());
    auto [t, fresh] = types.emplace(u.object.key, u.object.type);
    if (!fresh && t->second != u.object.type)
      return done(make_error(errc::wrong_type,
                             "one request updates " + u.object.key.bucket.substr(0, 64) + "/"
                               + u.object.key.key.substr(0, 64) + " as a "
                               + std::string{to_string(t->second)} + " and as a "
                               + std::string{to_string(u.object.type)}));
    if (std::holds_alternative<crdt_op>(u.op) && slot.emplace(u.object.key, need.size()).second)
      need.push_back(u.object);
  }
  if (need.empty())
    return done(updates_by_partition(ctx->q, updates));
  auto q = ctx->q;
  read_objects_at(
    sys, std::move(ctx), snapshot, need, own, true,
    [q, updates = std::move(updates), slot = std::move(slot),
     done](expected<read_result> r) {
      if (!r)
        return done(r.err());
      std::vector<crdt_object> objects;
      for (const auto& bytes : r->states) {
        auto obj = crdt_object::decode(bytes);
        if (!obj)
          return done(obj.err());
        objects.push_back(std::move(*obj));
      }
      downstream_context dctx{next_token_source(), wall_clock_us()};
      writes_by_partition out;
      for (const auto& u : updates) {
        auto p = partition_for(u.object.key.bucket, u.object.key.key, q);
        if (!p)
          return done(p.err());
        if (const auto* c = std::get_if<counter_op>(&u.op)) {
          out[*p].push_back(tx_update{u.object.key, u.object.type,
                                      counter_effect{c->update.delta}, c->id});
          continue;
        }
        // Each update sees the ones before it in the request. A bounded
        // counter spends and gains the rights of this data centre.
        auto& obj = objects.at(slot.at(u.object.key));
        auto update = std::get<crdt_op>(u.op).update;
        if (auto* b = std::get_if<b_counter_update>(&update)) {
          if (auto* i = std::get_if<b_counter_increment>(b))
            i->replica = local_dc;
          else if (auto* d = std::get_if<b_counter_decrement>(b))
            d->replica = local_dc;
        }
        auto eff = obj.prepare(update, dctx);
        if (!eff && eff.err().code() == errc::no_permissions)
          // The partition decides on rights (check_rights), after its op-id
          // check: a resent decrement that was applied must be dismissed
          // there, not refused here because the snapshot now shows it.
          if (const auto* d = std::get_if<b_counter_decrement>(
                &std::get<b_counter_update>(update)))
            eff = crdt_effect{b_counter_effect{b_counter_effect::kind::decrement,
                                               d->amount, d->replica, 0}};
        if (!eff)
          return done(eff.err());
        if (auto st = obj.apply(*eff); !st)
          return done(st.err());
        // A bcounter's op id (its effects add): the partition's exactly-once
        // gate, as for counters; the effect has no tokens, so a resend
        // prepares the same effect and digest. A map update's op id (for
        // its nested counters): a resend is prepared anew with fresh tokens,
        // and the gate compares its shape (crdt/map_op_shape.hpp).
        out[*p].push_back(tx_update{u.object.key, u.object.type, std::move(*eff),
                                    std::get<crdt_op>(u.op).id});
      }
      done(std::move(out));
    });
}

namespace {

void commit_two_phase(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                      tx_id tx, std::uint64_t snapshot, writes_by_partition writes,
                      std::function<void(expected<std::uint64_t>)> done, int attempt);

} // namespace

void commit_writes(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                   tx_id tx, std::uint64_t snapshot,
                   std::map<std::uint32_t, std::vector<tx_update>> writes,
                   std::function<void(expected<std::uint64_t>)> done) {
  if (writes.empty()) // read-only: commits at its snapshot
    return done(snapshot);
  if (writes.size() == 1) {
    auto& [p, ups] = *writes.begin();
    return call_prepare(sys, *ctx, p, part_prepare_req{tx, std::move(ups), snapshot, false},
                        [done](part_time_resp r) {
                          if (r.err)
                            done(*r.err);
                          else
                            done(r.time);
                        });
  }
  commit_two_phase(sys, std::move(ctx), tx, snapshot, std::move(writes), std::move(done), 0);
}

namespace {

void commit_two_phase(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                      tx_id tx, std::uint64_t snapshot, writes_by_partition writes,
                      std::function<void(expected<std::uint64_t>)> done_outside, int attempt) {
  // In progress here until `done`: a node holding `tx` prepared waits for
  // this coordinator while it is (coordinated_txs).
  ctx->coordinating->begin(tx);
  auto done = [ctx, tx, done_outside](expected<std::uint64_t> r) {
    // Committed and acknowledged by every participant: no one will ask.
    ctx->coordinating->end(tx, r.has_value());
    done_outside(std::move(r));
  };
  // Every participant is routed before anything is sent: a partition that
  // is unavailable fails the commit with nothing prepared anywhere.
  {
    auto table = ctx->routes->load();
    for (const auto& w : writes) {
      const route* r = w.first < table->size() ? &(*table)[w.first] : nullptr;
      if (!r || !r->handle)
        return done(make_error(errc::unavailable,
                               r && !r->why.empty()
                                 ? r->why
                                 : "partition " + std::to_string(w.first)
                                     + " is unavailable"));
    }
  }
  std::vector<std::uint32_t> parts;
  for (const auto& w : writes)
    parts.push_back(w.first);
  auto prepared = std::make_shared<gather<std::uint64_t>>();
  prepared->left = parts.size();
  // Kept for a run again after errc::gave_way (the requests take `writes`).
  auto again = attempt < max_gave_way_retries
                 ? std::make_shared<const writes_by_partition>(writes)
                 : nullptr;
  auto on_prepared = [&sys, ctx, tx, snapshot, parts, prepared, done, done_outside, again,
                      attempt](part_time_resp r) {
    auto t = r.time;
    if (!prepared->add(std::move(r.err), [t](std::uint64_t& m) { m = std::max(m, t); }))
      return;
    if (prepared->err) {
      for (auto p : parts)
        send_abort(*ctx, p, tx);
      if (prepared->err->code() == errc::gave_way && again) {
        ctx->coordinating->end(tx);
        return commit_two_phase(sys, ctx, next_static_tx_id(*ctx), snapshot, *again,
                                done_outside, attempt + 1);
      }
      return done(*prepared->err);
    }
    const auto commit_time = prepared->acc;
    // A holder of this transaction may have aborted it through this node
    // meanwhile (coordinated_txs::decide with force: a link dropped while
    // the prepares were out): then abort, never commit.
    if (!ctx->coordinating->commit(tx, commit_time)) {
      for (auto p : parts)
        send_abort(*ctx, p, tx);
      return done(make_error(errc::aborted,
                             "transaction aborted: its prepares took so long that a "
                             "participant asked this coordinator to decide (a node was "
                             "paused or unreachable); nothing was applied, retry"));
    }
    auto acked = std::make_shared<gather<int>>();
    acked->left = parts.size();
    for (auto p : parts)
      call_commit(sys, *ctx, p, part_commit_req{tx, commit_time},
                  [acked, commit_time, done, tx, p](part_ack a) {
                    // Aborted by recovery behind a fence (this coordinator
                    // was out of reach: docs/RELIABILITY.md, "The
                    // participant fence") is expected; a split decision
                    // never is.
                    if (a.err && a.err->code() == errc::aborted
                        && a.err->message().find("split decision") != std::string::npos)
                      log(log_level::error, "partition ", p, ": ", tx, ": ",
                          a.err->to_string());
                    if (!acked->add(std::move(a.err), [](int&) {}))
                      return;
                    if (acked->err)
                      done(*acked->err);
                    else
                      done(commit_time);
                  });
  };
  // Each prepare record names every participant and this node (the
  // coordinator), so that recovery asks only them (issue 13).
  for (auto& [p, ups] : writes)
    call_prepare(sys, *ctx, p,
                 part_prepare_req{tx, std::move(ups), snapshot, true, parts, ctx->owner},
                 on_prepared);
}

} // namespace

} // namespace tally
