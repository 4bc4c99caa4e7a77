#include "actors/client_gateway.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/node_context.hpp"
#include "actors/open_transactions.hpp"
#include "actors/spawn_helper.hpp"
#include "actors/transactions.hpp"

namespace tally {

namespace {

class client_gateway final : public request_handler {
public:
  client_gateway(caf::actor_system& sys, std::shared_ptr<const node_context> ctx,
                 std::shared_ptr<open_transactions> txs)
      : sys_(sys), ctx_(std::move(ctx)), txs_(std::move(txs)) {}

  void closed(session_id session) override { txs_->forget_session(session); }
  bool holds_state(session_id session) override { return txs_->holds(session); }

  void handle(session_id session, request req, reply_fn reply) override {
    std::visit(
      [this, session, &reply](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, admin_req>) {
          run_admin(session, std::move(r), std::move(reply));
        } else if constexpr (std::is_same_v<T, static_update_objects_req>) {
          static_update(r, std::move(reply));
        } else if constexpr (std::is_same_v<T, static_read_objects_req>) {
          static_read(r, std::move(reply));
        } else if constexpr (std::is_same_v<T, start_transaction_req>) {
          txs_->start(session, r, std::move(reply));
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
  // 122: start, update and commit in one request (a one-step commit when
  // every key lives on one partition).
  void static_update(static_update_objects_req& su, reply_fn reply) {
    auto snap = snapshot_for(*ctx_, su.transaction);
    if (!snap)
      return reply(error_resp{snap.err()});
    // Every update but a counter's is prepared against its object read at
    // the snapshot first (read before write).
    prepare_writes(sys_, ctx_, *snap, std::move(su.updates), {},
                   [sys = &sys_, ctx = ctx_, at = *snap,
                    reply](expected<writes_by_partition> grouped) {
                     if (!grouped)
                       return reply(error_resp{grouped.err()});
                     commit_writes(*sys, ctx, next_static_tx_id(*ctx), at,
                                   std::move(*grouped),
                                   [reply](expected<std::uint64_t> t) {
                                     if (!t)
                                       reply(error_resp{t.err()});
                                     else
                                       reply(commit_resp{true, clock_bytes(*t), 0});
                                   });
                   });
  }

  // 123: one snapshot read.
  void static_read(static_read_objects_req& sr, reply_fn reply) {
    auto snap = snapshot_for(*ctx_, sr.transaction);
    if (!snap)
      return reply(error_resp{snap.err()});
    read_at(sys_, ctx_, *snap, sr.objects, {},
            [reply, at = *snap, types = types_of(sr.objects)](expected<std::vector<crdt_value>> v) {
              if (!v)
                return reply(error_resp{v.err()});
              static_read_objects_resp out;
              out.objects = read_objects_resp{true, std::move(*v), 0, types};
              out.commit = commit_resp{true, clock_bytes(at), 0};
              reply(std::move(out));
            });
  }

  // Tally's admin requests (docs/CLUSTER.md, "Admin"): answered by the
  // membership actor, asked by a short-lived actor.
  void run_admin(session_id session, admin_req req, reply_fn reply) {
    auto fail = [reply](errc code, std::string text) {
      reply(admin_resp::failure(code, std::move(text)));
    };
    // Anyone who reaches the client port could make the node leave (or
    // remove a member): admin
    // requests are taken only from the admin socket (issue 18).
    if (!is_admin_session(session))
      return fail(errc::invalid_argument,
                  ctx_->admin_socket.empty()
                    ? "admin commands are refused on the client port, and this node has no "
                      "admin socket (tallyd --admin-socket)"
                    : "admin commands are accepted only on the node's admin socket "
                        + ctx_->admin_socket + ", not on the client port: tally --admin-socket "
                        + ctx_->admin_socket + " cluster ...");
    if (!ctx_->membership)
      return fail(errc::unavailable, "this node has no membership actor");
    auto membership = ctx_->membership;
    auto timeout = ctx_->limits.request_timeout;
    if (req.command == "status") {
      if (!req.args.empty())
        return fail(errc::invalid_argument, "status takes no arguments");
      spawn_self_only(sys_, [membership, timeout, fail, reply](caf::event_based_actor* self) {
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
      spawn_self_only(sys_, [membership, timeout, who, fail, reply](caf::event_based_actor* self) {
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
    } else if (req.command == "remove") {
      // remove NODE [--force] (docs/CLUSTER.md, "Removing a dead node").
      const bool force = req.args.size() == 2 && req.args[1] == "--force";
      if (req.args.empty() || req.args.size() > 2 || (req.args.size() == 2 && !force))
        return fail(errc::invalid_argument, "remove takes a node id and optionally --force");
      std::string who = req.args[0];
      spawn_self_only(sys_, [membership, timeout, who, force, fail,
                             reply](caf::event_based_actor* self) {
        self->request(membership, timeout, remove_atom::value, who, force)
          .then(
            [reply, fail](bool ok, std::string& text) {
              if (ok)
                reply(admin_resp{true, std::move(text), 0});
              else
                fail(errc::invalid_argument, std::move(text));
            },
            [fail, self](caf::error& e) {
              fail(errc::unavailable, "remove: " + self->system().render(e));
            });
      });
    } else {
      fail(errc::invalid_argument,
           "unknown admin command '" + req.command + "' (known: status, leave, remove)");
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
