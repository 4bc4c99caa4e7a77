#include "actors/coordinator.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "common/log.hpp"
#include "actors/node_context.hpp"
#include "actors/wire.hpp"
#include "protocol/descriptor.hpp"
#include "ring/partition.hpp"

namespace tally {

namespace {

// ---- the transaction logic shared by both kinds of coordinator ------------

struct tx_state {
  std::shared_ptr<const node_context> ctx;
  tx_id tx;
  vector_clock snapshot;
  std::uint64_t snapshot_time = 0;
  std::map<std::uint32_t, std::vector<tx_update>> writes; // by partition
  std::map<object_key, std::vector<crdt_effect>> own;
  bool busy = false; // a commit is under way
};

using values_cb = std::function<void(expected<std::vector<crdt_value>>)>;
using time_cb = std::function<void(expected<std::uint64_t>)>;

error from_caf(const caf::error& e) {
  if (e == caf::sec::request_timeout)
    return make_error(errc::timeout, "a partition did not answer in time");
  return make_error(errc::unavailable,
                    "a partition is unavailable (its node is stopping or unreachable); retry");
}

// The actor serving partition `p` in a routing table taken once per request
// (node_context::routes), or why none can: a partition on a node that is
// down fails here at once.
expected<caf::actor> route_of(const std::vector<route>& table, std::uint32_t p) {
  if (p >= table.size())
    return make_error(errc::unavailable, "partition " + std::to_string(p)
                                           + " is not routed yet");
  const auto& r = table[p];
  if (!r.handle)
    return make_error(errc::unavailable, r.why.empty()
                                           ? "partition " + std::to_string(p)
                                               + " is unavailable"
                                           : r.why);
  return r.handle;
}

// A partition's reply bytes, decoded; a reply that does not decode is an
// error of the whole request.
template <class T>
T decode_reply(const std::string& bytes) {
  auto r = decode_wire<T>(bytes);
  if (!r) {
    T out;
    out.err = r.err();
    return out;
  }
  return std::move(*r);
}

status begin(tx_state& st, const start_transaction_req& start) {
  auto t = snapshot_for(*st.ctx, start);
  if (!t)
    return t.err();
  st.snapshot_time = *t;
  st.snapshot = vector_clock{{local_dc, *t}};
  return {};
}

expected<std::uint32_t> partition_of(const tx_state& st, const object_key& k) {
  return partition_for(k.bucket, k.key, st.ctx->q);
}

// Buffers `updates` (validated first: nothing is buffered on an error).
status add_updates(tx_state& st, const std::vector<update_op>& updates) {
  auto grouped = updates_by_partition(st.ctx->q, updates);
  if (!grouped)
    return grouped.err();
  for (auto& [p, ups] : *grouped)
    for (auto& u : ups) {
      st.own[u.key].push_back(u.effect);
      st.writes[p].push_back(std::move(u));
    }
  return {};
}

// How a coordinator answers a client_request: through its sink (the client
// server's path) or its response promise.
struct answer {
  caf::response_promise rp;
  std::function<void(client_reply)> sink;
  void operator()(client_reply r) {
    if (sink)
      sink(std::move(r));
    else
      rp.deliver(std::move(r));
  }
};

template <class Self>
void read_objects(Self* self, tx_state& st,
                  const std::vector<bound_object>& objects, values_cb done) {
  struct gather {
    std::vector<crdt_value> values;
    std::size_t left = 0;
    std::optional<error> err;
    values_cb done;
  };
  std::map<std::uint32_t, std::pair<part_read_req, std::vector<std::size_t>>> by_part;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto& o = objects[i];
    if (auto ok = check_supported(o); !ok)
      return done(ok.err());
    auto p = partition_of(st, o.key);
    if (!p)
      return done(p.err());
    auto& slot = by_part[*p];
    slot.first.snapshot = st.snapshot;
    std::vector<crdt_effect> own;
    if (auto it = st.own.find(o.key); it != st.own.end())
      own = it->second;
    slot.first.items.push_back(read_item{o.key, o.type, std::move(own)});
    slot.second.push_back(i);
  }
  if (by_part.empty())
    return done(std::vector<crdt_value>{});
  auto g = std::make_shared<gather>();
  g->values.resize(objects.size());
  g->left = by_part.size();
  g->done = std::move(done);
  auto finish_one = [g] {
    if (--g->left == 0) {
      if (g->err)
        g->done(*g->err);
      else
        g->done(std::move(g->values));
    }
  };
  std::vector<caf::actor> targets;
  auto table = st.ctx->routes->load();
  for (auto& [p, slot] : by_part) {
    auto target = route_of(*table, p);
    if (!target)
      return g->done(target.err());
    targets.push_back(std::move(*target));
  }
  std::size_t t = 0;
  for (auto& [p, slot] : by_part) {
    auto idx = slot.second;
    self->request(targets[t++], st.ctx->limits.request_timeout,
                  part_read_atom::value, encode_wire(slot.first))
      .then(
        [g, idx, finish_one](std::string& bytes) {
          auto r = decode_reply<part_read_resp>(bytes);
          if (r.err)
            g->err = *r.err;
          else
            for (std::size_t j = 0; j < idx.size() && j < r.values.size(); ++j)
              g->values[idx[j]] = r.values[j];
          finish_one();
        },
        [g, finish_one](caf::error& e) {
          g->err = from_caf(e);
          finish_one();
        });
  }
}

template <class Self>
void commit_tx(Self* self, tx_state& st, time_cb done) {
  st.busy = true;
  auto ctx = st.ctx;
  if (st.writes.empty())
    return done(st.snapshot_time); // read-only: commits at its snapshot
  // Every participant is routed before anything is sent: a partition that
  // is unavailable fails the commit with nothing prepared anywhere.
  std::map<std::uint32_t, caf::actor> targets;
  auto table = ctx->routes->load();
  for (const auto& w : st.writes) {
    auto target = route_of(*table, w.first);
    if (!target)
      return done(target.err());
    targets.emplace(w.first, std::move(*target));
  }
  if (st.writes.size() == 1) {
    auto& [p, ups] = *st.writes.begin();
    self->request(targets[p], ctx->limits.request_timeout, part_prepare_atom::value,
                  encode_wire(part_prepare_req{st.tx, std::move(ups),
                                               st.snapshot_time, false}))
      .then(
        [done](std::string& bytes) {
          auto r = decode_reply<part_time_resp>(bytes);
          if (r.err)
            done(*r.err);
          else
            done(r.time);
        },
        [done](caf::error& e) { done(from_caf(e)); });
    return;
  }
  // Two-phase commit.
  struct gather {
    std::size_t left = 0;
    std::uint64_t max_time = 0;
    std::optional<error> err;
    std::vector<caf::actor> parts;
  };
  auto g = std::make_shared<gather>();
  g->left = st.writes.size();
  auto tx = st.tx;
  auto on_prepared = [self, g, ctx, tx, done] {
    if (--g->left != 0)
      return;
    if (g->err) {
      for (const auto& p : g->parts)
        self->send(p, part_abort_atom::value, encode_wire(part_abort_req{tx}));
      return done(*g->err);
    }
    auto commit_time = g->max_time;
    auto c = std::make_shared<gather>();
    c->left = g->parts.size();
    for (const auto& p : g->parts)
      self->request(p, ctx->limits.request_timeout, part_commit_atom::value,
                    encode_wire(part_commit_req{tx, commit_time}))
        .then(
          [c, commit_time, done](std::string& bytes) {
            auto a = decode_reply<part_ack>(bytes);
            if (a.err)
              c->err = *a.err;
            if (--c->left == 0) {
              if (c->err)
                done(*c->err);
              else
                done(commit_time);
            }
          },
          [c, done](caf::error& e) {
            c->err = from_caf(e);
            if (--c->left == 0)
              done(*c->err);
          });
  };
  for (auto& [p, ups] : st.writes) {
    g->parts.push_back(targets[p]);
    self->request(targets[p], ctx->limits.request_timeout, part_prepare_atom::value,
                  encode_wire(part_prepare_req{tx, std::move(ups),
                                               st.snapshot_time, true}))
      .then(
        [g, on_prepared](std::string& bytes) {
          auto r = decode_reply<part_time_resp>(bytes);
          if (r.err)
            g->err = *r.err;
          else
            g->max_time = std::max(g->max_time, r.time);
          on_prepared();
        },
        [g, on_prepared](caf::error& e) {
          g->err = from_caf(e);
          on_prepared();
        });
  }
}

// ---- static coordinator -----------------------------------------------------

struct static_state {
  tx_state tx;
  static inline const char* name = "static_coordinator";
};

caf::behavior static_coordinator(caf::stateful_actor<static_state>* self,
                                 std::shared_ptr<const node_context> ctx,
                                 tx_id tx) {
  self->state.tx.ctx = std::move(ctx);
  self->state.tx.tx = tx;
  return {
    [self](client_request& cr) -> caf::response_promise {
      auto rp = self->make_response_promise();
      answer ans{rp, std::move(cr.sink)};
      auto& st = self->state.tx;
      auto reply = [self, ans](client_reply r) mutable {
        ans(std::move(r));
        self->quit();
      };
      if (auto* su = std::get_if<static_update_objects_req>(&cr.req)) {
        if (auto ok = begin(st, su->transaction); !ok)
          return reply(error_reply(ok.err())), rp;
        if (auto ok = add_updates(st, su->updates); !ok)
          return reply(error_reply(ok.err())), rp;
        commit_tx(self, st, [reply](expected<std::uint64_t> t) mutable {
          if (!t)
            reply(error_reply(t.err()));
          else
            reply(client_reply{commit_resp{true, clock_bytes(*t), 0}});
        });
      } else if (auto* sr = std::get_if<static_read_objects_req>(&cr.req)) {
        if (auto ok = begin(st, sr->transaction); !ok)
          return reply(error_reply(ok.err())), rp;
        auto snap = st.snapshot_time;
        read_objects(self, st, sr->objects,
                     [reply, snap](expected<std::vector<crdt_value>> v) mutable {
                       if (!v)
                         return reply(error_reply(v.err()));
                       static_read_objects_resp r;
                       r.objects = read_objects_resp{true, std::move(*v), 0};
                       r.commit = commit_resp{true, clock_bytes(snap), 0};
                       reply(client_reply{std::move(r)});
                     });
      } else {
        reply(error_reply(make_error(errc::invalid_argument,
                                     "not a static transaction request")));
      }
      return rp;
    },
  };
}

// ---- two-phase commit of an interactive transaction ------------------------

struct committer_state {
  tx_state tx;
  static inline const char* name = "committer";
};

void committer(caf::stateful_actor<committer_state>* self,
               std::shared_ptr<const node_context> ctx, tx_id tx,
               std::uint64_t snapshot_time,
               std::map<std::uint32_t, std::vector<tx_update>> writes,
               std::function<void(expected<std::uint64_t>)> done) {
  auto& st = self->state.tx;
  st.ctx = std::move(ctx);
  st.tx = tx;
  st.snapshot_time = snapshot_time;
  st.snapshot = vector_clock{{local_dc, snapshot_time}};
  st.writes = std::move(writes);
  commit_tx(self, st, [self, done](expected<std::uint64_t> t) {
    done(std::move(t));
    self->quit();
  });
}

} // namespace

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
      return make_error(errc::wrong_type, "only counter updates are served");
    auto p = partition_for(u.object.key.bucket, u.object.key.key, q);
    if (!p)
      return p.err();
    out[*p].push_back(tx_update{u.object.key, u.object.type,
                                counter_effect{op->update.delta}, op->id});
  }
  return out;
}

std::string clock_bytes(std::uint64_t t) {
  return encode_clock(vector_clock{{local_dc, t}});
}

tx_id next_static_tx_id(const node_context& ctx) {
  // Static transactions only need distinct ids at the partitions: the
  // sequence runs downward from the top so it never meets the manager's.
  static std::atomic<std::uint64_t> seq{~std::uint64_t{0}};
  return tx_id{ctx.incarnation, seq.fetch_sub(1, std::memory_order_relaxed)};
}

caf::actor spawn_static_coordinator(caf::actor_system& sys,
                                    std::shared_ptr<const node_context> ctx) {
  auto tx = next_static_tx_id(*ctx);
  return sys.spawn(static_coordinator, std::move(ctx), tx);
}

void commit_two_phase(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                      tx_id tx, std::uint64_t snapshot_time,
                      std::map<std::uint32_t, std::vector<tx_update>> writes,
                      std::function<void(expected<std::uint64_t>)> done) {
  sys.spawn(committer, std::move(ctx), tx, snapshot_time, std::move(writes),
            std::move(done));
}

} // namespace tally
