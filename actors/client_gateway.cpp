#include "actors/client_gateway.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/coordinator.hpp"
#include "actors/node_context.hpp"
#include "actors/open_transactions.hpp"
#include "actors/partition_calls.hpp"
#include "ring/partition.hpp"

namespace tally {

namespace {

class client_gateway final : public request_handler {
public:
  client_gateway(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                 std::shared_ptr<open_transactions> txs)
      : sys_(sys), ctx_(std::move(ctx)), txs_(std::move(txs)) {}

  void handle(request req, reply_fn reply) override {
    std::visit(
      [this, &reply](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, admin_req>) {
          run_admin(std::move(r), std::move(reply));
        } else if constexpr (std::is_same_v<T, static_update_objects_req>) {
          if (!direct_update(r, reply))
            via_coordinator(std::move(r), std::move(reply));
        } else if constexpr (std::is_same_v<T, static_read_objects_req>) {
          if (!direct_read(r, reply))
            via_coordinator(std::move(r), std::move(reply));
        } else if constexpr (std::is_same_v<T, start_transaction_req>) {
          txs_->start(r, std::move(reply));
        } else if constexpr (std::is_same_v<T, read_objects_req>) {
          txs_->read(r, std::move(reply));
        } else if constexpr (std::is_same_v<T, update_objects_req>) {
          txs_->update(r, std::move(reply));
        } else if constexpr (std::is_same_v<T, commit_transaction_req>) {
          txs_->commit(r, std::move(reply));
        } else {
          static_assert(std::is_same_v<T, abort_transaction_req>);
          txs_->abort(r, std::move(reply));
        }
      },
      req);
  }

private:
  // A static request over several partitions: a coordinator of its own.
  void via_coordinator(request req, reply_fn reply) {
    caf::anon_send(spawn_static_coordinator(sys_, ctx_),
                   client_request{std::move(req), [reply](client_reply r) {
                                    reply(std::move(r.resp));
                                  }});
  }

  // A static update whose keys all live on one partition: a one-step
  // commit there. False when it is not such an update.
  bool direct_update(static_update_objects_req& su, const reply_fn& reply) {
    auto grouped = updates_by_partition(ctx_->q, su.updates);
    if (!grouped) {
      reply(error_resp{grouped.err()});
      return true;
    }
    if (grouped->size() != 1)
      return false;
    auto& [p, ups] = *grouped->begin();
    auto snap = snapshot_for(*ctx_, su.transaction);
    if (!snap) {
      reply(error_resp{snap.err()});
      return true;
    }
    call_prepare(sys_, *ctx_, p,
                 part_prepare_req{next_static_tx_id(*ctx_), std::move(ups), *snap, false},
                 [reply](part_time_resp r) {
                   if (r.err)
                     reply(error_resp{std::move(*r.err)});
                   else
                     reply(commit_resp{true, clock_bytes(r.time), 0});
                 });
    return true;
  }

  // A static read whose keys all live on one partition: one read
  // there at the snapshot. False when it is not such a read.
  bool direct_read(static_read_objects_req& sr, const reply_fn& reply) {
    if (sr.objects.empty())
      return false;
    std::optional<std::uint32_t> only;
    part_read_req req;
    for (const auto& o : sr.objects) {
      if (auto ok = check_supported(o); !ok) {
        reply(error_resp{ok.err()});
        return true;
      }
      auto p = partition_for(o.key.bucket, o.key.key, ctx_->q);
      if (!p) {
        reply(error_resp{p.err()});
        return true;
      }
      if (only && *only != *p)
        return false;
      only = *p;
      req.items.push_back(read_item{o.key, o.type, {}});
    }
    auto snap = snapshot_for(*ctx_, sr.transaction);
    if (!snap) {
      reply(error_resp{snap.err()});
      return true;
    }
    req.snapshot = vector_clock{{local_dc, *snap}};
    call_read(sys_, *ctx_, *only, std::move(req), [reply, at = *snap](part_read_resp r) {
      if (r.err)
        return reply(error_resp{std::move(*r.err)});
      static_read_objects_resp out;
      out.objects = read_objects_resp{true, std::move(r.values), 0};
      out.commit = commit_resp{true, clock_bytes(at), 0};
      reply(std::move(out));
    });
    return true;
  }

  // Tally's admin requests (docs/CLUSTER.md, "Admin"): answered by the
  // membership actor, asked by a short-lived actor.
  void run_admin(admin_req req, reply_fn reply) {
    auto fail = [reply](errc code, std::string text) {
      reply(admin_resp::failure(code, std::move(text)));
    };
    if (!ctx_->membership)
      return fail(errc::unavailable, "this node has no membership actor");
    auto membership = ctx_->membership;
    auto timeout = ctx_->limits.request_timeout;
    if (req.command == "status") {
      if (!req.args.empty())
        return fail(errc::invalid_argument, "status takes no arguments");
      sys_.spawn([membership, timeout, fail, reply](caf::event_based_actor* self) {
        self->request(membership, timeout, status_atom::value)
          .then([reply](std::string& text) { reply(admin_resp{true, std::move(text), 0}); },
                [fail, self](caf::error& e) {
                  fail(errc::unavailable, "status: " + self->system().render(e));
                });
      });
    } else if (req.command == "leave") {
      if (req.args.size() > 1)
        return fail(errc::invalid_argument, "leave takes at most one node id");
      std::string who = req.args.empty() ? std::string{} : req.args[0];
      sys_.spawn([membership, timeout, who, fail, reply](caf::event_based_actor* self) {
        self->request(membership, timeout, leave_atom::value, who)
          .then(
            [reply, fail](bool ok, std::string& text) {
              if (ok)
                reply(admin_resp{true, std::move(text), 0});
              else
                fail(errc::invalid_argument, std::move(text));
            },
            [fail, self](caf::error& e) {
              fail(errc::unavailable, "leave: " + self->system().render(e));
            });
      });
    } else {
      fail(errc::invalid_argument,
           "unknown admin command '" + req.command + "' (known: status, leave)");
    }
  }

  caf::actor_system& sys_;
  std::shared_ptr<const node_context> ctx_;
  std::shared_ptr<open_transactions> txs_;
};

using sweep_atom = caf::atom_constant<caf::atom("tx_sweep")>;

// Aborts idle interactive transactions about every 250 ms.
caf::behavior tx_sweeper(caf::event_based_actor* self,
                         std::shared_ptr<open_transactions> txs) {
  self->send(self, sweep_atom::value);
  return {
    [self, txs](sweep_atom) {
      txs->expire(std::chrono::steady_clock::now());
      self->delayed_send(self, std::chrono::milliseconds{250}, sweep_atom::value);
    },
  };
}

} // namespace

client_gateway_parts make_client_gateway(caf::actor_system& sys,
                                         std::shared_ptr<const node_context> ctx) {
  auto txs = std::make_shared<open_transactions>(sys, ctx);
  client_gateway_parts out;
  out.sweeper = sys.spawn(tx_sweeper, txs);
  out.handler = std::make_shared<client_gateway>(sys, std::move(ctx), std::move(txs));
  return out;
}

} // namespace tally
