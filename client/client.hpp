// Tally's C++ client library (docs/CLIENT.md): static and interactive
// counter transactions, pipelining, exactly-once retries and session
// causality over one connection (client/connection.hpp).
//
//   auto c = client::connect({});                   // 127.0.0.1:8087
//   auto clock = c->update({{{"b", "k"}, 5}});      // static update
//   auto r = c->read({{{"b", "k"}, crdt_type::counter}});
//   auto tx = c->start();                           // interactive
//   tx->update({{{"b", "k"}, -1}}); auto v = tx->read(...); tx->commit();
//
// Exactly-once: every counter update carries an op id <client id, seq>; the
// client id is random per client, seq increases by one per update. When a
// static request times out or the connection drops, the client reconnects
// and resends the very same frame, with the same op ids, up to `retries`
// times: the server's FBF recognises a resent update that was applied and
// acknowledges it without applying it again. This holds only while a retry
// happens inside the server's FBF window: client_options::retry_window()
// must stay shorter than the node's retry timeout R, which its FBF window
// `(N+1)*t` covers (docs/CLIENT.md, "Exactly-once retries").
//
// Session causality: the client remembers the join of every commit and
// snapshot clock it has seen and sends it as the snapshot lower bound of
// the next transaction (read-your-writes, monotonic reads). Switchable.
//
// Not thread-safe: one client per thread (tally-bench runs one per worker).
// A transaction or pipeline points to its client: the client must outlive
// it and must not be moved meanwhile, and only one of them may be in use
// at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/connection.hpp"
#include "common/expected.hpp"
#include "crdt/crdt_type.hpp"
#include "crdt/op_id.hpp"
#include "protocol/messages.hpp"

namespace tally {

struct client_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8087;
  /// Limit on connecting and on waiting for each reply. Why 1 s: the
  /// AntidoteDB TypeScript client uses the same, and a healthy node answers
  /// a counter transaction in well under a millisecond on a LAN.
  std::chrono::milliseconds timeout{1000};
  /// How many times a static request is resent after a timeout or a dropped
  /// connection before its error is returned (each request in a pipeline
  /// counts its own resends). Why 2: it rides out a lost connection or a
  /// node restart, and keeps retry_window() = 2 * 2 * 1 s = 4 s inside the
  /// node's default FBF retry timeout R = 5 s (fbf_config::retry_timeout).
  unsigned retries = 2;
  /// Send the session clock as each transaction's snapshot lower bound.
  bool session_causality = true;
  /// Most requests a pipeline keeps unanswered on the socket. Why 128:
  /// enough to hide a LAN round trip behind ~100 small requests, while a
  /// dropped connection loses (and resends) at most that many replies, and
  /// the node buffers at most that many per connection.
  std::size_t max_in_flight = 128;
  /// The op-id client id; random when absent. Set it only to replay a
  /// known history (tests): two clients with one id break exactly-once.
  std::optional<std::uint64_t> client_id;
  /// Connect to this Unix socket (a node's admin socket, tallyd
  /// --admin-socket) instead of host:port; admin requests need it.
  std::string admin_socket;
  /// TLS to a node's TLS port (tallyd --client-tls-port; docs/CLIENT.md,
  /// "TLS"): on when `tls_ca` names the PEM CA that signed the node's
  /// certificate. `tls_cert` and `tls_key` (both or neither) are this
  /// client's certificate, for nodes started with --client-tls-ca.
  /// `tls_server_name` is the name the node's certificate must carry
  /// (default: `host`; an IP address is matched against IP SANs).
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;

  /// The longest time from the first send of a static request to its last
  /// resend: before each of the `retries` resends the client may wait
  /// `timeout` for a reply and `timeout` for the reconnect. Exactly-once
  /// needs it no longer than the node's FBF retry timeout R
  /// (docs/CLIENT.md, "Exactly-once retries").
  std::chrono::milliseconds retry_window() const noexcept {
    return 2 * retries * timeout;
  }
};

/// One counter update of a transaction: `delta` on the counter `key`.
struct counter_inc {
  object_key key;
  std::int64_t delta = 1;
  crdt_type type = crdt_type::counter; // or crdt_type::fatcounter
  /// The op id; the client assigns the next one (client::next_op_id) when
  /// absent. Give one only to resend an update of your own.
  std::optional<op_id> id = std::nullopt;
};

/// Values read at one snapshot, in the order asked for, and that snapshot's
/// clock bytes (a static update's reply in a pipeline has no values).
struct read_result {
  std::vector<std::int64_t> values;
  std::string clock;
};

/// Values of any type read at one snapshot, in the order asked for
/// (int64 for counters, bool for flags, string for an lwwreg, sorted
/// strings for sets and an mvreg, map_value for maps), and the snapshot's
/// clock bytes.
struct value_result {
  std::vector<crdt_value> values;
  std::string clock;
};

// ---- operations of every type (docs/CLIENT.md, "Every type") -------------

/// Adds `elements` to the set `key` (orset or rwset).
update_op set_add_op(object_key key, std::vector<std::string> elements,
                     crdt_type type = crdt_type::orset);
/// Removes `elements` from the set `key`.
update_op set_remove_op(object_key key, std::vector<std::string> elements,
                        crdt_type type = crdt_type::orset);
/// Assigns `value` to the register `key` (lwwreg or mvreg).
update_op register_assign_op(object_key key, std::string value,
                             crdt_type type = crdt_type::lwwreg);
/// Enables (true) or disables (false) the flag `key` (flag_ew or flag_dw).
update_op flag_op(object_key key, bool enable, crdt_type type = crdt_type::flag_ew);
/// Increments (delta >= 0) or decrements the bounded counter `key`; a
/// decrement beyond the node's rights fails with errc::no_permissions.
update_op b_counter_op(object_key key, std::int64_t delta);
/// Resets `key`: empties a set, a register, a flag or an rrmap.
update_op reset_op(object_key key, crdt_type type);
/// Updates the entries of the map `key` (gmap or rrmap): each nested update
/// is an update_op whose object key names the entry (its bucket unused) and
/// type; `removes` (rrmap only) are entry keys and types.
update_op map_op(object_key key, const std::vector<update_op>& updates,
                 const std::vector<map_key>& removes = {},
                 crdt_type type = crdt_type::rrmap);

/// A readable rendering of a value: 5, true, "text", {a, b} for a set,
/// [a, b] for a multi-value register, {key:type=value, ...} for a map.
/// Register and element bytes are printed as they are.
std::string format_value(const crdt_value& value, crdt_type type);

class client;

/// An interactive transaction (start, read/update..., commit or abort).
/// Its requests are not resent: a timeout or a dropped connection fails the
/// transaction (the server aborts it when its own timer fires), and the
/// caller runs it again. Destroying an active transaction aborts it, best
/// effort.
class transaction {
public:
  transaction(transaction&& other) noexcept;
  transaction& operator=(transaction&& other) noexcept;
  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;
  ~transaction();

  /// One value per object, at the transaction's snapshot plus its own
  /// updates.
  expected<std::vector<std::int64_t>> read(
    const std::vector<bound_object>& objects);

  /// Buffers updates in the transaction; each gets its op id now.
  status update(const std::vector<counter_inc>& updates);

  /// Values of any type (read() refuses non-counter values).
  expected<std::vector<crdt_value>> read_values(const std::vector<bound_object>& objects);
  /// Updates of any type (the *_op helpers); op ids are given as by
  /// client::update_ops.
  status update_ops(std::vector<update_op> ops);

  /// Commits; the commit clock bytes. The transaction is over either way.
  expected<std::string> commit();

  /// Buffers `updates` and commits, sending both requests in one write
  /// without waiting for the update's reply: one round trip instead of two
  /// (Redis's MULTI...EXEC). A failed update aborts the transaction at the
  /// node (docs/PROTOCOL.md, "Errors"): nothing of it is stored and the
  /// update's error is returned. The transaction is over either way.
  expected<std::string> commit_with(const std::vector<counter_inc>& updates);
  /// commit_with() for updates of any type.
  expected<std::string> commit_with_ops(std::vector<update_op> ops);

  /// Aborts. The transaction is over either way.
  status abort();

  /// False once committed, aborted or failed.
  bool active() const noexcept { return active_; }

  /// The server's opaque transaction descriptor.
  const std::string& descriptor() const noexcept { return descriptor_; }

private:
  friend class client;
  transaction(client* owner, std::string descriptor);

  /// errc::unavailable when the transaction is over.
  status check_active(const char* what) const;

  client* client_;
  std::string descriptor_;
  bool active_ = true;
};

/// Static requests sent without waiting, their replies collected in order.
///
///   auto p = c->make_pipeline();
///   for (...) p.update({...});       // sent at once, replies not awaited
///   auto replies = p.collect();      // one expected<read_result> each
///
/// At most options().max_in_flight requests are outstanding: submitting
/// sends up to that many at once, collect() sends the rest as replies come
/// in. collect() resends, with the same op ids, every request still
/// unanswered when a reply times out or the connection drops; each request
/// is resent at most options().retries times.
class pipeline {
public:
  /// Queues and sends a static update; its index in collect()'s replies.
  std::size_t update(const std::vector<counter_inc>& updates);
  /// Queues and sends a static read.
  std::size_t read(const std::vector<bound_object>& objects,
                   std::optional<std::string> clock = std::nullopt);

  std::size_t size() const noexcept { return frames_.size(); }

  /// Waits for every reply; then the pipeline is empty again.
  std::vector<expected<read_result>> collect();

private:
  friend class client;
  explicit pipeline(client* owner) : client_(owner) {}
  void submit(const request& req);

  client* client_;
  std::vector<std::string> frames_;
  std::vector<msg_code> codes_;
  std::size_t sent_ = 0; // frames written on the current connection
};

class client {
public:
  /// Connects (so a node that is down is reported here). errc::bad_config
  /// for a zero timeout; connection::open's errors.
  static expected<client> connect(client_options options);

  /// A static update (one request: start, update, commit); the commit
  /// clock bytes. Retried as described above.
  expected<std::string> update(const std::vector<counter_inc>& updates);

  /// A static read at one snapshot: at least `clock` if given, else the
  /// session clock (when session causality is on). Retried.
  expected<read_result> read(const std::vector<bound_object>& objects,
                             std::optional<std::string> clock = std::nullopt);

  /// A static update of any types (the *_op helpers above); a counter_op,
  /// a bcounter operation or a map operation with a counter inside (at any
  /// depth) without an op id gets the next one. Retried like update():
  /// resends of these are recognised by op id (a map update's as a whole),
  /// and a resent set, register or flag operation reads as once (an add or
  /// assign repeated), not deduplicated.
  expected<std::string> update_ops(std::vector<update_op> ops);
  /// A static read of objects of any type (read() refuses non-counter
  /// values with errc::wrong_type). Retried.
  expected<value_result> read_values(const std::vector<bound_object>& objects,
                                     std::optional<std::string> clock = std::nullopt);

  /// Starts an interactive transaction (snapshot as for read()).
  expected<transaction> start(std::optional<std::string> clock = std::nullopt);

  pipeline make_pipeline() { return pipeline{this}; }

  /// A cluster administration command (Tally extension, codes 240/241,
  /// docs/PROTOCOL.md, "Admin requests"), e.g. admin("status", {}) or
  /// admin("leave", {"tally@127.0.0.1:9087"}); the text the node answered.
  /// Errors: errc::invalid_argument, before sending, for a request outside
  /// the codec's bounds (check_admin_req); a failed TallyAdminResp as its
  /// errc (unavailable when the node sent none it knows) with the node's
  /// text as the message; an ErrorResp (e.g. from a node that does not serve
  /// admin requests) as its error, the message prefixed with "admin command
  /// '<command>': "; connection errors as for every request. Not resent
  /// after a timeout or drop: an admin command need not be idempotent.
  expected<std::string> admin(const std::string& command,
                              const std::vector<std::string>& args);

  /// The next op id: <client_id(), last seq + 1>.
  op_id next_op_id() noexcept { return {client_id_, ++seq_}; }

  std::uint64_t client_id() const noexcept { return client_id_; }

  /// The join of the clocks seen so far; nullopt before the first reply.
  const std::optional<std::string>& session_clock() const noexcept {
    return session_clock_;
  }
  void set_session_causality(bool on) noexcept {
    options_.session_causality = on;
  }
  /// Forgets the session clock.
  void reset_session() noexcept { session_clock_.reset(); }

  const client_options& options() const noexcept { return options_; }

  /// Rounds of resending (after a timeout or drop) so far.
  std::uint64_t retries_done() const noexcept { return retries_done_; }

  /// True when the node answered the last request (with a reply or an
  /// ErrorResp), false when it could not be reached (refused, timed out,
  /// dropped). Both can fail with errc::unavailable ("snapshot too old" is
  /// the node's answer), so a caller that must tell them apart (the tally
  /// CLI's exit codes) asks this.
  bool node_answered() const noexcept { return node_answered_; }

private:
  friend class transaction;
  friend class pipeline;

  client(client_options options, connection conn, std::uint64_t id,
         std::shared_ptr<const tls_context> tls);

  /// The snapshot to send: `explicit_clock`, else the session clock.
  std::optional<std::string> snapshot(std::optional<std::string> explicit_clock);

  /// Joins `clock` into the session clock.
  void absorb(const std::string& clock);

  std::vector<update_op> to_ops(const std::vector<counter_inc>& updates);
  /// Gives every counter_op, bcounter crdt_op and map crdt_op with a nested
  /// counter without an op id the next one.
  void assign_op_ids(std::vector<update_op>& ops);

  /// Sends frames[already_sent..] (frames before were written on the
  /// current connection), then reads one reply per frame. With `retryable`,
  /// a timeout or drop reconnects and resends the unanswered frames. Always
  /// one result per frame.
  std::vector<expected<response>> exchange(
    const std::vector<std::string>& frames, std::size_t already_sent,
    bool retryable);

  /// One request, one reply.
  expected<response> call(const request& req, bool retryable);

  status ensure_connected();

  client_options options_;
  connection conn_;
  std::shared_ptr<const tls_context> tls_; // null: plain TCP
  std::uint64_t client_id_;
  std::uint64_t seq_ = 0;
  std::optional<std::string> session_clock_;
  std::uint64_t retries_done_ = 0;
  bool node_answered_ = false;
};

} // namespace tally
