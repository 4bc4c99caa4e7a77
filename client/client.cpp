#include "client/client.hpp"

#include <algorithm>
#include <random>
#include <type_traits>
#include <utility>

#include "crdt/map_op_shape.hpp"
#include "protocol/descriptor.hpp"

namespace tally {

namespace {

std::uint64_t random_client_id() {
  std::random_device rd;
  std::uint64_t id = 0;
  while (id == 0) // 0 reads as "no client" in logs; never hand it out
    id = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return id;
}

std::string_view wire_error_name(std::uint32_t code) {
  switch (code) {
    case 0: return "unknown";
    case 1: return "timeout";
    case 2: return "no_permissions";
    case 3: return "aborted";
    default: return "error";
  }
}

error failed(std::string_view request, std::uint32_t code) {
  return make_error(errc_from_wire_error(code),
                    std::string{request} + " failed: the node answered "
                      + std::string{wire_error_name(code)} + " ("
                      + std::to_string(code) + ")");
}

/// The reply of `T`, an error_resp's error, or errc::corrupt for another
/// message.
template <class T>
expected<T> expect(expected<response> resp, std::string_view request) {
  if (!resp)
    return resp.err();
  if (auto* e = std::get_if<error_resp>(&*resp))
    return e->err;
  if (auto* r = std::get_if<T>(&*resp))
    return std::move(*r);
  return make_error(errc::corrupt,
                    std::string{request} + ": unexpected reply "
                      + std::string{to_string(code_of(*resp))});
}

expected<std::vector<std::int64_t>> values_of(const read_objects_resp& r,
                                              std::string_view request) {
  if (!r.success)
    return failed(request, r.error_code);
  std::vector<std::int64_t> out;
  out.reserve(r.values.size());
  for (std::size_t i = 0; i < r.values.size(); ++i) {
    const auto* v = std::get_if<std::int64_t>(&r.values[i]);
    if (!v)
      return make_error(errc::wrong_type,
                        std::string{request} + ": object " + std::to_string(i)
                          + " is not a counter; read it with read_values()");
    out.push_back(*v);
  }
  return out;
}

expected<value_result> static_read_values(expected<response> resp) {
  auto r = expect<static_read_objects_resp>(std::move(resp),
                                            "StaticReadObjects");
  if (!r)
    return r.err();
  if (!r->commit.success)
    return failed("StaticReadObjects", r->commit.error_code);
  if (!r->objects.success)
    return failed("StaticReadObjects", r->objects.error_code);
  return value_result{std::move(r->objects.values), std::move(r->commit.commit_time)};
}

// The counters of a static read (errc::wrong_type for any other value).
expected<read_result> counters_of(expected<value_result> r) {
  if (!r)
    return r.err();
  auto values = values_of(read_objects_resp{true, std::move(r->values), 0},
                          "StaticReadObjects");
  if (!values)
    return values.err();
  return read_result{std::move(*values), std::move(r->clock)};
}

expected<read_result> static_read_result(expected<response> resp) {
  return counters_of(static_read_values(std::move(resp)));
}

expected<std::string> commit_clock(expected<response> resp,
                                   std::string_view request) {
  auto r = expect<commit_resp>(std::move(resp), request);
  if (!r)
    return r.err();
  if (!r->success)
    return failed(request, r->error_code);
  return std::move(r->commit_time);
}

std::string frame_bytes(const request& req) {
  auto bytes = encode_frame(encode_request(req));
  // A request too big for one frame cannot be sent; an empty string marks
  // it, and exchange() answers it with the error without sending.
  return bytes ? std::move(*bytes) : std::string{};
}

} // namespace

// ---- client ----------------------------------------------------------------

client::client(client_options options, connection conn, std::uint64_t id,
               std::shared_ptr<const tls_context> tls)
    : options_(std::move(options)), conn_(std::move(conn)), tls_(std::move(tls)),
      client_id_(id) {}

expected<client> client::connect(client_options options) {
  if (options.timeout.count() <= 0)
    return make_error(errc::bad_config, "client timeout must be positive, got "
                                          + std::to_string(
                                            options.timeout.count())
                                          + " ms");
  std::shared_ptr<const tls_context> tls;
  bool tls_files = !options.tls_cert.empty() || !options.tls_key.empty()
                   || !options.tls_server_name.empty();
  if (options.tls_ca.empty() && tls_files)
    return make_error(errc::bad_config, "a TLS client certificate, key or server name needs "
                                        "the CA of the node's certificate (--tls-ca)");
  if (!options.tls_ca.empty()) {
    auto ctx = tls_context::client(
      {options.tls_ca, options.tls_cert, options.tls_key, options.tls_server_name});
    if (!ctx)
      return ctx.err();
    tls = std::make_shared<const tls_context>(std::move(*ctx));
  }
  auto conn = options.admin_socket.empty()
                ? connection::open(options.host, options.port, options.timeout, tls.get())
                : connection::open_unix(options.admin_socket);
  if (!conn)
    return conn.err();
  auto id = options.client_id ? *options.client_id : random_client_id();
  return client{std::move(options), std::move(*conn), id, std::move(tls)};
}

status client::ensure_connected() {
  if (conn_.is_open())
    return {};
  auto conn = options_.admin_socket.empty()
                ? connection::open(options_.host, options_.port, options_.timeout, tls_.get())
                : connection::open_unix(options_.admin_socket);
  if (!conn)
    return conn.err();
  conn_ = std::move(*conn);
  return {};
}

std::optional<std::string>
client::snapshot(std::optional<std::string> explicit_clock) {
  if (explicit_clock)
    return explicit_clock;
  if (options_.session_causality)
    return session_clock_;
  return std::nullopt;
}

void client::absorb(const std::string& clock) {
  if (clock.empty())
    return;
  if (session_clock_) {
    auto mine = decode_clock(*session_clock_);
    auto theirs = decode_clock(clock);
    if (mine && theirs) {
      mine->merge(*theirs);
      session_clock_ = encode_clock(*mine);
      return;
    }
  }
  // First clock, or bytes that are not Tally's (an AntidoteDB server): keep
  // the newest, which is what AntidoteDB's own clients do.
  session_clock_ = clock;
}

std::vector<update_op>
client::to_ops(const std::vector<counter_inc>& updates) {
  std::vector<update_op> ops;
  ops.reserve(updates.size());
  for (const auto& u : updates) {
    counter_op op;
    op.update.delta = u.delta;
    op.id = u.id ? *u.id : next_op_id();
    ops.push_back(update_op{bound_object{u.key, u.type}, op});
  }
  return ops;
}

void client::assign_op_ids(std::vector<update_op>& ops) {
  for (auto& u : ops) {
    if (auto* c = std::get_if<counter_op>(&u.op); c && !c->id)
      c->id = next_op_id();
    auto* g = std::get_if<crdt_op>(&u.op);
    if (!g || g->id)
      continue;
    // Effects that add: a bcounter's, and a map's with nested counters.
    const auto* m = std::get_if<map_update>(&g->update);
    if (std::holds_alternative<b_counter_update>(g->update) || (m && has_nested_counter(*m)))
      g->id = next_op_id();
  }
}

std::vector<expected<response>>
client::exchange(const std::vector<std::string>& frames,
                 std::size_t already_sent, bool retryable) {
  std::vector<expected<response>> results;
  results.reserve(frames.size());
  std::size_t sent = conn_.is_open() ? already_sent : 0;
  // Times each frame has been resent. The oldest unanswered frame has been
  // resent at least as often as any later one, so it decides when to stop.
  std::vector<unsigned> resent(frames.size(), 0);
  while (results.size() < frames.size()) {
    auto next = results.size();
    if (sent < next) // only unsendable frames were skipped
      sent = next;
    if (frames[next].empty()) { // too big to frame: fail it alone
      results.emplace_back(make_error(
        errc::invalid_argument, "request larger than the 16 MiB frame limit"));
      continue;
    }
    status st = ensure_connected();
    auto window = options_.max_in_flight == 0 ? 1 : options_.max_in_flight;
    for (; st && sent < frames.size() && sent - next < window; ++sent)
      if (!frames[sent].empty())
        st = conn_.send_bytes(frames[sent],
                              client_clock::now() + options_.timeout);
    if (st) {
      auto f = conn_.receive(client_clock::now() + options_.timeout);
      if (f) {
        results.emplace_back(decode_response(f->code, f->body));
        continue;
      }
      st = f.err();
    }
    auto code = st.err().code();
    bool transient = code == errc::timeout || code == errc::unavailable;
    auto rounds = resent[next];
    if (!retryable || !transient || rounds >= options_.retries) {
      auto msg = st.err().message();
      if (code == errc::timeout && msg.find("no reply") != std::string::npos)
        msg += " (" + std::to_string(options_.timeout.count()) + " ms)";
      if (rounds > 0)
        msg += "; gave up after " + std::to_string(rounds)
               + (rounds == 1 ? " retry" : " retries");
      while (results.size() < frames.size())
        results.emplace_back(make_error(code, msg));
      break;
    }
    // Resend everything unanswered, same bytes, same op ids: a copy that
    // the node applied before the failure is dismissed by its FBF.
    conn_.close();
    ++retries_done_;
    // A failed reconnect counts as an attempt of the oldest request too,
    // or a node that stays down would be retried forever.
    for (auto k = next; k < std::max(sent, next + 1); ++k)
      ++resent[k];
    sent = next;
  }
  return results;
}

expected<response> client::call(const request& req, bool retryable) {
  auto results = exchange({frame_bytes(req)}, 0, retryable);
  // A frame that does not decode was still the node's answer.
  node_answered_ = results.front().has_value()
                   || results.front().err().code() == errc::corrupt;
  return std::move(results.front());
}

expected<std::string> client::update(const std::vector<counter_inc>& updates) {
  return update_ops(to_ops(updates));
}

expected<std::string> client::update_ops(std::vector<update_op> ops) {
  assign_op_ids(ops);
  static_update_objects_req req;
  req.transaction.timestamp = snapshot(std::nullopt);
  req.updates = std::move(ops);
  auto clock = commit_clock(call(req, true), "StaticUpdateObjects");
  if (clock)
    absorb(*clock);
  return clock;
}

expected<value_result> client::read_values(const std::vector<bound_object>& objects,
                                           std::optional<std::string> clock) {
  static_read_objects_req req;
  req.transaction.timestamp = snapshot(std::move(clock));
  req.objects = objects;
  auto result = static_read_values(call(req, true));
  if (result)
    absorb(result->clock);
  return result;
}

expected<read_result> client::read(const std::vector<bound_object>& objects,
                                   std::optional<std::string> clock) {
  return counters_of(read_values(objects, std::move(clock)));
}

expected<transaction> client::start(std::optional<std::string> clock) {
  start_transaction_req req;
  req.timestamp = snapshot(std::move(clock));
  // Starting twice leaves at most an idle transaction that the node's timer
  // aborts, so a start may be resent.
  auto r = expect<start_transaction_resp>(call(req, true), "StartTransaction");
  if (!r)
    return r.err();
  if (!r->success)
    return failed("StartTransaction", r->error_code);
  return transaction{this, std::move(r->transaction_descriptor)};
}

expected<std::string> client::admin(const std::string& command,
                                    const std::vector<std::string>& args) {
  admin_req req{command, args};
  if (auto st = check_admin_req(req); !st)
    return st.err();
  auto context = "admin command '" + command + "'";
  auto resp = call(req, false);
  if (resp) {
    if (auto* e = std::get_if<error_resp>(&*resp))
      return make_error(e->err.code(), context + ": " + e->err.message());
  }
  auto r = expect<admin_resp>(std::move(resp), "TallyAdmin");
  if (!r)
    return r.err();
  if (!r->success) {
    auto code = is_known_errc(r->error_code) ? static_cast<errc>(r->error_code)
                                             : errc::unavailable;
    if (r->text.empty())
      return make_error(code, context + " failed: the node answered "
                                + std::string{to_string(code)});
    return make_error(code, std::move(r->text));
  }
  return std::move(r->text);
}

// ---- transaction -----------------------------------------------------------

transaction::transaction(client* owner, std::string descriptor)
    : client_(owner), descriptor_(std::move(descriptor)) {}

transaction::transaction(transaction&& other) noexcept
    : client_(other.client_),
      descriptor_(std::move(other.descriptor_)),
      active_(std::exchange(other.active_, false)) {}

transaction& transaction::operator=(transaction&& other) noexcept {
  if (this != &other) {
    if (active_)
      (void) abort();
    client_ = other.client_;
    descriptor_ = std::move(other.descriptor_);
    active_ = std::exchange(other.active_, false);
  }
  return *this;
}

transaction::~transaction() {
  // Best effort: an open transaction would otherwise hold its snapshot on
  // the node until the node's timer aborts it. Skipped when the connection
  // is gone (the node will abort it anyway).
  if (active_ && client_->conn_.is_open())
    (void) abort();
}

status transaction::check_active(const char* what) const {
  if (!active_)
    return make_error(errc::unavailable,
                      std::string{what}
                        + ": the transaction is over (committed, aborted or "
                          "failed); start a new one");
  return {};
}

expected<std::vector<std::int64_t>>
transaction::read(const std::vector<bound_object>& objects) {
  auto r = read_values(objects);
  if (!r)
    return r.err();
  auto values = values_of(read_objects_resp{true, std::move(*r), 0}, "ReadObjects");
  if (!values)
    active_ = false;
  return values;
}

status transaction::update(const std::vector<counter_inc>& updates) {
  return update_ops(client_->to_ops(updates));
}

expected<std::vector<crdt_value>>
transaction::read_values(const std::vector<bound_object>& objects) {
  if (auto st = check_active("ReadObjects"); !st)
    return st.err();
  auto r = expect<read_objects_resp>(
    client_->call(read_objects_req{objects, descriptor_}, false),
    "ReadObjects");
  if (r && !r->success)
    r = failed("ReadObjects", r->error_code);
  if (!r) {
    active_ = false;
    return r.err();
  }
  return std::move(r->values);
}

status transaction::update_ops(std::vector<update_op> ops) {
  if (auto st = check_active("UpdateObjects"); !st)
    return st;
  client_->assign_op_ids(ops);
  auto r = expect<operation_resp>(
    client_->call(update_objects_req{std::move(ops), descriptor_}, false),
    "UpdateObjects");
  if (!r || !r->success)
    active_ = false;
  if (!r)
    return r.err();
  if (!r->success)
    return failed("UpdateObjects", r->error_code);
  return {};
}

expected<std::string> transaction::commit() {
  if (auto st = check_active("CommitTransaction"); !st)
    return st.err();
  active_ = false;
  auto clock = commit_clock(
    client_->call(commit_transaction_req{descriptor_}, false),
    "CommitTransaction");
  if (clock)
    client_->absorb(*clock);
  return clock;
}

expected<std::string> transaction::commit_with(const std::vector<counter_inc>& updates) {
  return commit_with_ops(client_->to_ops(updates));
}

expected<std::string> transaction::commit_with_ops(std::vector<update_op> ops) {
  if (auto st = check_active("UpdateObjects"); !st)
    return st.err();
  active_ = false;
  client_->assign_op_ids(ops);
  auto replies = client_->exchange(
    {frame_bytes(update_objects_req{std::move(ops), descriptor_}),
     frame_bytes(commit_transaction_req{descriptor_})},
    0, false);
  // The update's failure is the cause; the commit behind it then only
  // says "aborted".
  auto up = expect<operation_resp>(std::move(replies[0]), "UpdateObjects");
  if (!up)
    return up.err();
  if (!up->success)
    return failed("UpdateObjects", up->error_code);
  auto clock = commit_clock(std::move(replies[1]), "CommitTransaction");
  if (clock)
    client_->absorb(*clock);
  return clock;
}

status transaction::abort() {
  if (auto st = check_active("AbortTransaction"); !st)
    return st;
  active_ = false;
  auto r = expect<operation_resp>(
    client_->call(abort_transaction_req{descriptor_}, false),
    "AbortTransaction");
  if (!r)
    return r.err();
  if (!r->success)
    return failed("AbortTransaction", r->error_code);
  return {};
}

// ---- pipeline --------------------------------------------------------------

void pipeline::submit(const request& req) {
  frames_.push_back(frame_bytes(req));
  codes_.push_back(code_of(req));
  // Send now when the connection is healthy; a failure is not reported
  // here: collect() reconnects and resends every unanswered request.
  auto& conn = client_->conn_;
  if (sent_ + 1 == frames_.size() && sent_ < client_->options_.max_in_flight
      && conn.is_open() && !frames_.back().empty()) {
    auto deadline = client_clock::now() + client_->options_.timeout;
    if (conn.send_bytes(frames_.back(), deadline))
      ++sent_;
  }
}

std::size_t pipeline::update(const std::vector<counter_inc>& updates) {
  static_update_objects_req req;
  req.transaction.timestamp = client_->snapshot(std::nullopt);
  req.updates = client_->to_ops(updates);
  submit(req);
  return frames_.size() - 1;
}

std::size_t pipeline::read(const std::vector<bound_object>& objects,
                           std::optional<std::string> clock) {
  static_read_objects_req req;
  req.transaction.timestamp = client_->snapshot(std::move(clock));
  req.objects = objects;
  submit(req);
  return frames_.size() - 1;
}

std::vector<expected<read_result>> pipeline::collect() {
  // Frames written before a failed send were on a connection that is now
  // closed; exchange() then resends from the first.
  auto replies = client_->exchange(frames_, sent_, true);
  std::vector<expected<read_result>> out;
  out.reserve(replies.size());
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (codes_[i] == msg_code::static_read_objects) {
      auto r = static_read_result(std::move(replies[i]));
      if (r)
        client_->absorb(r->clock);
      out.push_back(std::move(r));
    } else {
      auto clock = commit_clock(std::move(replies[i]), "StaticUpdateObjects");
      if (!clock) {
        out.emplace_back(clock.err());
        continue;
      }
      client_->absorb(*clock);
      out.emplace_back(read_result{{}, std::move(*clock)});
    }
  }
  frames_.clear();
  codes_.clear();
  sent_ = 0;
  return out;
}

// ---- operations of every type ---------------------------------------------

update_op set_add_op(object_key key, std::vector<std::string> elements, crdt_type type) {
  return update_op{bound_object{std::move(key), type},
                   crdt_op{set_update{set_add{std::move(elements)}}}};
}

update_op set_remove_op(object_key key, std::vector<std::string> elements,
                        crdt_type type) {
  return update_op{bound_object{std::move(key), type},
                   crdt_op{set_update{set_remove{std::move(elements)}}}};
}

update_op register_assign_op(object_key key, std::string value, crdt_type type) {
  return update_op{bound_object{std::move(key), type},
                   crdt_op{register_update{register_assign{std::move(value), std::nullopt}}}};
}

update_op flag_op(object_key key, bool enable, crdt_type type) {
  return update_op{bound_object{std::move(key), type},
                   crdt_op{enable ? flag_update::enable : flag_update::disable}};
}

update_op b_counter_op(object_key key, std::int64_t delta) {
  b_counter_update u = b_counter_increment{static_cast<std::uint64_t>(delta), 0};
  if (delta < 0)
    u = b_counter_decrement{static_cast<std::uint64_t>(-(delta + 1)) + 1, 0};
  return update_op{bound_object{std::move(key), crdt_type::bcounter}, crdt_op{u}};
}

update_op reset_op(object_key key, crdt_type type) {
  crdt_update u = flag_update::reset;
  switch (type) {
    case crdt_type::orset: case crdt_type::rwset: case crdt_type::gset:
      u = set_update{set_reset{}};
      break;
    case crdt_type::lwwreg: case crdt_type::mvreg:
      u = register_update{register_reset{}};
      break;
    case crdt_type::gmap: case crdt_type::rrmap:
      u = map_update{{}, {}, true};
      break;
    default:
      break; // flags; other types refuse a reset at the node
  }
  return update_op{bound_object{std::move(key), type}, crdt_op{std::move(u)}};
}

update_op map_op(object_key key, const std::vector<update_op>& updates,
                 const std::vector<map_key>& removes, crdt_type type) {
  map_update m;
  for (const auto& u : updates) {
    crdt_update nested = counter_update{1};
    if (const auto* c = std::get_if<counter_op>(&u.op))
      nested = c->update;
    else if (const auto* g = std::get_if<crdt_op>(&u.op))
      nested = g->update;
    m.updates.push_back(keyed_update{map_key{u.object.key.key, u.object.type}, std::move(nested)});
  }
  m.removes = removes;
  return update_op{bound_object{std::move(key), type}, crdt_op{std::move(m)}};
}

namespace {

void format_into(std::string& out, const crdt_value& value, crdt_type type) {
  std::visit(
    [&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, std::int64_t>) {
        out += std::to_string(v);
      } else if constexpr (std::is_same_v<T, bool>) {
        out += v ? "true" : "false";
      } else if constexpr (std::is_same_v<T, std::string>) {
        out += '"';
        out += v;
        out += '"';
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        out += type == crdt_type::mvreg ? '[' : '{';
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (i)
            out += ", ";
          out += v[i];
        }
        out += type == crdt_type::mvreg ? ']' : '}';
      } else {
        out += '{';
        for (std::size_t i = 0; i < v.entries.size(); ++i) {
          if (i)
            out += ", ";
          out += v.entries[i].key.key;
          out += ':';
          out += to_string(v.entries[i].key.type);
          out += '=';
          format_into(out, v.entries[i].value, v.entries[i].key.type);
        }
        out += '}';
      }
    },
    value);
}

} // namespace

std::string format_value(const crdt_value& value, crdt_type type) {
  std::string out;
  format_into(out, value, type);
  return out;
}

} // namespace tally
