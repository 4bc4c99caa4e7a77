// One client connection's protocol state, without its socket (the shard in
// client_server.cpp does the I/O): the frame decoder, the reply slots that
// keep replies in request order, the bytes waiting to be written, the
// session floor, and when to stop reading (back-pressure) or close.
// Plain C++ and single-threaded: tests drive it byte by byte.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "protocol/request_limits.hpp"
#include "server/request_memory_budget.hpp"
#include "server/session_floor.hpp"

namespace tally {

/// Largest frame (code byte plus body) a client may send to a node:
/// 256 MiB. Bigger than the protocol's default (protocol/frame.hpp, what
/// Tally's own client sends) because AntidoteDB clients send big batches:
/// antidote_ts_client's own suite writes 1,000 registers of 165,537 bytes
/// in one frame of about 166 MB. What many such frames at once may hold is
/// bounded by the request memory budget below (docs/SECURITY.md, "Big
/// frames and the request memory budget").
constexpr std::uint32_t default_max_request_frame_size = 256u << 20;
/// The node-wide request memory budget (tallyd --max-request-memory):
/// 512 MiB, so that one frame at the cap fits, with room for other
/// clients' requests, but no more than three frames of antidote_ts_client's
/// size at once: a node holds several times a big request's bytes while it
/// serves it (docs/SECURITY.md gives the measured RSS).
constexpr std::size_t default_max_request_memory = std::size_t{512} << 20;

struct connection_limits {
  std::uint32_t max_frame_size = default_max_request_frame_size;
  std::size_t max_in_flight = 1024;
  std::size_t max_pending_output = 4u << 20;
  /// Every decoded request is checked against these at the door
  /// (protocol/request_limits.hpp) before it is handed on.
  request_limits requests;
};

class client_connection {
public:
  /// `budget` (may be null: no limit) is shared by the node's connections:
  /// every frame is charged to it from its length field until its reply is
  /// produced (server/request_memory_budget.hpp).
  explicit client_connection(connection_limits limits,
                             std::shared_ptr<request_memory_budget> budget = nullptr);
  ~client_connection();
  client_connection(const client_connection&) = delete;
  client_connection& operator=(const client_connection&) = delete;

  /// Bytes read from the socket. A framing error (a zero or oversized
  /// length), or a frame whose announced size would take the node's request
  /// memory budget over its limit, is answered with an ErrorResp after the
  /// replies to the frames before it, then the connection closes.
  void feed(std::string_view bytes);
  /// The peer closed its sending side: every request already received is
  /// still answered, then the connection closes.
  void peer_closed();

  /// A request to hand on: `slot` names its reply.
  struct dispatch {
    std::uint64_t slot = 0;
    request req;
  };
  /// The next request to hand on, while in_flight() is below the limit.
  /// Bad bodies are answered here (an ErrorResp in their slot) and
  /// skipped; an unknown code stops the connection (after the replies to
  /// the requests before it), like AntidoteDB.
  std::optional<dispatch> next();

  /// The reply to `slot` (encoded frame bytes) and the commit time or
  /// snapshot it reports (session_floor::clock_of; empty when none).
  void complete(std::uint64_t slot, std::string bytes,
                const vector_clock& seen = {});

  /// Bytes ready to write, in request order, and how many were written.
  std::string_view output() const noexcept {
    return std::string_view{out_}.substr(out_pos_);
  }
  void written(std::size_t n);

  /// Whether the shard should read the socket: not while too many requests
  /// wait or too many reply bytes are unread, nor after the end.
  bool wants_read() const noexcept;
  /// True when the connection is finished: no more requests will come and
  /// every reply has been written.
  bool done() const noexcept;
  std::size_t in_flight() const noexcept { return slots_.size() - filled_; }
  const session_floor& floor() const noexcept { return floor_; }
  /// True while part of a request is buffered (a slow or stalled sender).
  bool mid_request() const noexcept { return decoder_.mid_frame(); }
  /// This connection's share of the request memory budget: frames being
  /// received or waiting, and requests not answered yet.
  std::size_t charged() const noexcept { return charged_; }

private:
  status admit(std::uint32_t length);
  void fill(std::uint64_t slot, std::string bytes);
  std::uint64_t open_slot(std::size_t charge = 0);

  struct reply_slot {
    std::optional<std::string> reply;
    std::size_t charge = 0; // of the budget, given back when answered
  };

  connection_limits limits_;
  std::shared_ptr<request_memory_budget> budget_;
  std::size_t charged_ = 0;           // this connection's share of the budget
  std::deque<std::size_t> frame_charges_; // admitted frames not yet decoded
  frame_decoder decoder_;
  session_floor floor_;
  std::deque<reply_slot> slots_; // from slot next_write_
  std::size_t filled_ = 0;         // answered slots not yet moved to out_
  std::uint64_t next_slot_ = 0;
  std::uint64_t next_write_ = 0;
  std::string out_;
  std::size_t out_pos_ = 0;
  bool ended_ = false;       // no more requests are taken
  bool peer_closed_ = false; // the peer sends nothing more
  std::optional<error> framing_error_;
};

/// The reply frame bytes of `resp` (no size limit: a client asked for it).
std::string reply_bytes(const response& resp);

} // namespace tally
