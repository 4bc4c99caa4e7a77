#include "actors/partition_calls.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/node_context.hpp"
#include "actors/spawn_helper.hpp"
#include "actors/wire.hpp"

namespace tally {

namespace {

// Where requests for `p` go, or why none can.
expected<const route*> route_for(const std::vector<route>& table, std::uint32_t p) {
  if (p >= table.size())
    return make_error(errc::unavailable, "partition " + std::to_string(p)
                                           + " is not routed yet");
  const auto& r = table[p];
  if (!r.handle)
    return make_error(errc::unavailable,
                      r.why.empty() ? "partition " + std::to_string(p) + " is unavailable"
                                    : r.why);
  return &r;
}

template <class Resp>
Resp failed(error err) {
  Resp r;
  r.err = std::move(err);
  return r;
}

// A request to a remote partition on `node`, asked by a short-lived actor.
// It fails at once when the link to that node is lost first, or was lost
// already (remote_calls): CAF would let it wait out its timeout.
template <class Resp, class Atom>
void remote_call(caf::actor_system& sys, const node_context& ctx, const std::string& node,
                 caf::actor target, Atom kind, std::string bytes,
                 std::function<void(Resp)> done_once) {
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto done = [answered, done_once = std::move(done_once)](Resp r) {
    if (!answered->exchange(true))
      done_once(std::move(r));
  };
  auto lost = [done, node] {
    done(failed<Resp>(make_error(errc::unavailable,
                                 "the node of a partition (" + node
                                   + ") is down or unreachable; if this was a write, its "
                                     "outcome is unknown: retry with the same op ids")));
  };
  auto registry = ctx.remote;
  const auto id = registry->add(node, lost);
  if (id == 0)
    return lost();
  spawn_self_only(sys, [target, timeout = ctx.limits.request_timeout, kind,
                        bytes = std::move(bytes), done, registry,
                        id](caf::event_based_actor* self) {
    self->request(target, timeout, kind, bytes)
      .then(
        [done, registry, id](std::string& reply) {
          registry->finish(id);
          auto r = decode_wire<Resp>(reply);
          done(r ? std::move(*r) : failed<Resp>(r.err()));
        },
        [done, registry, id](caf::error& e) {
          registry->finish(id);
          done(failed<Resp>(
            e == caf::sec::request_timeout
              ? make_error(errc::timeout, "a partition did not answer in time")
              : make_error(errc::unavailable, "a partition is unavailable (its node "
                                              "is stopping or unreachable); retry")));
        });
  });
}

// One call to partition `p`: a local actor by anon_send of `Call`, a
// remote one through a requester; `done` gets the answer or why none came.
template <class Call, class Resp, class Atom, class Req>
void call_partition(caf::actor_system& sys, const node_context& ctx, std::uint32_t p,
                    Atom kind, Req req, std::function<void(Resp)> done) {
  auto table = ctx.routes->load();
  auto r = route_for(*table, p);
  if (!r)
    return done(failed<Resp>(r.err()));
  if ((*r)->node == ctx.owner)
    return caf::anon_send((*r)->handle, kind, Call{std::move(req), std::move(done)});
  remote_call<Resp>(sys, ctx, (*r)->node, (*r)->handle, kind, encode_wire(req),
                    std::move(done));
}

} // namespace

void call_read(caf::actor_system& sys, const node_context& ctx, std::uint32_t p,
               part_read_req req, std::function<void(part_read_resp)> done) {
  call_partition<part_read_call>(sys, ctx, p, part_read_atom::value, std::move(req),
                                 std::move(done));
}

void call_prepare(caf::actor_system& sys, const node_context& ctx,
                  std::uint32_t p, part_prepare_req req,
                  std::function<void(part_time_resp)> done) {
  call_partition<part_prepare_call>(sys, ctx, p, part_prepare_atom::value,
                                    std::move(req), std::move(done));
}

void call_commit(caf::actor_system& sys, const node_context& ctx,
                 std::uint32_t p, part_commit_req req,
                 std::function<void(part_ack)> done) {
  call_partition<part_commit_call>(sys, ctx, p, part_commit_atom::value,
                                   std::move(req), std::move(done));
}

void send_abort(const node_context& ctx, std::uint32_t p, const tx_id& tx) {
  auto table = ctx.routes->load();
  if (auto r = route_for(*table, p))
    caf::anon_send((*r)->handle, part_abort_atom::value, encode_wire(part_abort_req{tx}));
}

} // namespace tally
