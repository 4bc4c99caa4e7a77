#include "actors/client_endpoint.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/atoms.hpp"
#include "actors/caf_types.hpp"
#include "actors/coordinator.hpp"
#include "actors/log.hpp"
#include "actors/node_context.hpp"
#include "actors/partition_core.hpp" // wall_clock_us
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"

namespace tally {

namespace {

// Replies are written with no limit of their own: a read of many keys may
// exceed what a client may send, and the client asked for it.
constexpr std::uint32_t reply_frame_limit =
  std::numeric_limits<std::uint32_t>::max();

struct connection_state {
  std::optional<frame_decoder> decoder;
  std::uint64_t next_slot = 0;  // slot of the next request
  std::uint64_t next_write = 0; // slot whose reply goes out next
  std::map<std::uint64_t, std::optional<std::string>> slots;
  bool closing = false; // no more requests; close once replies are out
  static inline const char* name = "client_connection";
};

using conn_self = caf::io::stateful_broker<connection_state>*;

std::string reply_bytes(const response& resp) {
  auto bytes = encode_frame(encode_response(resp), reply_frame_limit);
  return bytes ? std::move(*bytes) : std::string{};
}

void write_ready(conn_self self, caf::io::connection_handle hdl) {
  auto& st = self->state;
  bool wrote = false;
  for (auto i = st.slots.find(st.next_write);
       i != st.slots.end() && i->second; i = st.slots.find(st.next_write)) {
    self->write(hdl, i->second->size(), i->second->data());
    wrote = true;
    st.slots.erase(i);
    ++st.next_write;
  }
  if (wrote)
    self->flush(hdl);
  if (st.closing && st.next_write == st.next_slot) {
    self->close(hdl);
    self->quit();
  }
}

void fill(conn_self self, caf::io::connection_handle hdl, std::uint64_t slot,
          const response& resp) {
  self->state.slots[slot] = reply_bytes(resp);
  write_ready(self, hdl);
}

// Tally's admin requests (docs/CLUSTER.md, "Admin"): answered by the
// membership actor.
void run_admin(conn_self self, caf::io::connection_handle hdl, std::uint64_t slot,
               const std::shared_ptr<const node_context>& ctx, admin_req req) {
  auto fail = [self, hdl, slot](errc code, std::string text) {
    fill(self, hdl, slot, admin_resp::failure(code, std::move(text)));
  };
  if (!ctx->membership)
    return fail(errc::unavailable, "this node has no membership actor");
  auto timeout = ctx->limits.request_timeout;
  if (req.command == "status") {
    if (!req.args.empty())
      return fail(errc::invalid_argument, "status takes no arguments");
    self->request(ctx->membership, timeout, status_atom::value)
      .then([self, hdl, slot](std::string& text) {
              fill(self, hdl, slot, admin_resp{true, std::move(text), 0});
            },
            [fail, self](caf::error& e) {
              fail(errc::unavailable, "status: " + self->system().render(e));
            });
  } else if (req.command == "leave") {
    if (req.args.size() > 1)
      return fail(errc::invalid_argument, "leave takes at most one node id");
    std::string who = req.args.empty() ? std::string{} : req.args[0];
    self->request(ctx->membership, timeout, leave_atom::value, who)
      .then(
        [self, hdl, slot](bool ok, std::string& text) {
          if (ok)
            fill(self, hdl, slot, admin_resp{true, std::move(text), 0});
          else
            fill(self, hdl, slot, admin_resp::failure(errc::invalid_argument, std::move(text)));
        },
        [fail, self](caf::error& e) {
          fail(errc::unavailable, "leave: " + self->system().render(e));
        });
  } else {
    fail(errc::invalid_argument,
         "unknown admin command '" + req.command + "' (known: status, leave)");
  }
}

void dispatch(conn_self self, caf::io::connection_handle hdl,
              const std::shared_ptr<const node_context>& ctx, frame f) {
  auto& st = self->state;
  // Validation at the door: nothing outside the limits reaches a partition.
  auto req = decode_valid_request(f.code, f.body, ctx->limits.requests,
                                  wall_clock_us());
  if (!req && req.err().code() == errc::unavailable) {
    // An unknown code: AntidoteDB closes the connection.
    log(log_level::warn, "client sent unknown message code ",
        static_cast<unsigned>(f.code), ": closing the connection");
    st.closing = true;
    write_ready(self, hdl);
    return;
  }
  auto slot = st.next_slot++;
  st.slots.emplace(slot, std::nullopt);
  if (!req) {
    fill(self, hdl, slot, error_resp{req.err()});
    return;
  }
  if (auto* admin = std::get_if<admin_req>(&*req)) {
    run_admin(self, hdl, slot, ctx, std::move(*admin));
    return;
  }
  caf::actor target;
  if (std::holds_alternative<static_update_objects_req>(*req)
      || std::holds_alternative<static_read_objects_req>(*req))
    target = spawn_static_coordinator(self->system(), ctx);
  else
    target = ctx->tx_manager;
  self->request(target, ctx->limits.request_timeout * 2,
                client_request{std::move(*req)})
    .then([self, hdl, slot](client_reply& r) { fill(self, hdl, slot, r.resp); },
          [self, hdl, slot](caf::error& e) {
            errc code = e == caf::sec::request_timeout ? errc::timeout
                                                       : errc::unavailable;
            fill(self, hdl, slot,
                 error_resp{make_error(code, "request failed: "
                                               + self->system().render(e))});
          });
}

caf::behavior connection(conn_self self, caf::io::connection_handle hdl,
                         std::shared_ptr<const node_context> ctx) {
  self->state.decoder.emplace(ctx->limits.max_frame_size);
  self->configure_read(hdl, caf::io::receive_policy::at_most(64 * 1024));
  return {
    [self, hdl, ctx](const caf::io::new_data_msg& msg) {
      auto& st = self->state;
      if (st.closing)
        return;
      auto fed = st.decoder->feed(
        std::string_view{msg.buf.data(), msg.buf.size()});
      while (!st.closing) {
        auto f = st.decoder->next();
        if (!f)
          break;
        dispatch(self, hdl, ctx, std::move(*f));
      }
      if (!fed && !st.closing) {
        log(log_level::warn, "bad frame from client: ", fed.err().to_string(),
            "; closing the connection");
        auto slot = st.next_slot++;
        st.slots.emplace(slot, reply_bytes(error_resp{fed.err()}));
        st.closing = true;
        write_ready(self, hdl);
      }
    },
    [self](const caf::io::connection_closed_msg&) { self->quit(); },
  };
}

struct acceptor_state {
  std::size_t live = 0;
  static inline const char* name = "client_acceptor";
};

caf::behavior acceptor(caf::io::stateful_broker<acceptor_state>* self,
                       caf::io::doorman_ptr door,
                       std::shared_ptr<const node_context> ctx) {
  self->add_doorman(std::move(door));
  self->set_down_handler([self](caf::down_msg&) { --self->state.live; });
  return {
    [self, ctx](const caf::io::new_connection_msg& ncm) {
      if (self->state.live >= ctx->limits.max_connections) {
        log(log_level::warn, "connection refused: ", self->state.live,
            " open connections is the limit");
        self->close(ncm.handle);
        return;
      }
      auto worker = self->fork(connection, ncm.handle, ctx);
      ++self->state.live;
      self->monitor(worker);
      self->link_to(worker);
    },
    [](const caf::io::acceptor_closed_msg&) {},
  };
}

} // namespace

expected<std::pair<caf::actor, std::uint16_t>>
start_client_endpoint(caf::actor_system& sys,
                      std::shared_ptr<const node_context> ctx,
                      const std::string& bind, std::uint16_t port) {
  auto& mm = sys.middleman();
  auto door = mm.backend().new_tcp_doorman(port, bind.c_str(), true);
  if (!door)
    return make_error(errc::unavailable,
                      "cannot listen on " + bind + ":" + std::to_string(port)
                        + ": " + sys.render(door.error())
                        + " (port in use or address not local?)");
  auto actual = (*door)->port();
  auto hdl = mm.spawn_broker(acceptor, std::move(*door), std::move(ctx));
  return std::make_pair(caf::actor{hdl}, actual);
}

} // namespace tally
