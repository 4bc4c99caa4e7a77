#include "actors/partition_calls.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/node_context.hpp"
#include "actors/remote_callers.hpp"
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

// A request to a remote partition on `node`, through the node's remote
// callers (actors/remote_callers.hpp: no actor spawned, no timer armed). It
// fails at once when the link to that node is lost first, or was lost
// already (remote_calls): CAF would let it wait out its timeout.
template <class Resp, class Atom>
void remote_call(const node_context& ctx, const std::string& node, const caf::actor& target,
                 Atom kind, std::string bytes, std::function<void(Resp)> done_once) {
  if (!ctx.callers)
    return done_once(failed<Resp>(make_error(errc::unavailable,
                                             "this node has no remote callers to reach a "
                                             "partition on another node")));
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
  ctx.callers->call(target, kind, std::move(bytes),
                    [done, registry, id](expected<std::string> reply) {
                      registry->finish(id);
                      if (!reply)
                        return done(failed<Resp>(reply.err()));
                      auto r = decode_wire<Resp>(*reply);
                      done(r ? std::move(*r) : failed<Resp>(r.err()));
                    });
}

// One call to partition `p`: a local actor by anon_send of `Call`, a
// remote one through the remote callers; `done` gets the answer or why none came.
template <class Call, class Resp, class Atom, class Req>
void call_partition(caf::actor_system& /*sys*/, const node_context& ctx, std::uint32_t p,
                    Atom kind, Req req, std::function<void(Resp)> done) {
  auto table = ctx.routes->load();
  auto r = route_for(*table, p);
  if (!r)
    return done(failed<Resp>(r.err()));
  if ((*r)->node == ctx.owner)
    return caf::anon_send((*r)->handle, kind, Call{std::move(req), std::move(done)});
  remote_call<Resp>(ctx, (*r)->node, (*r)->handle, kind, encode_wire(req), std::move(done));
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
