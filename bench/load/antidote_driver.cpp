// The AntidoteDB-protocol driver over client/connection.hpp (driver.hpp).
#include <chrono>
#include <optional>
#include <random>

#include "bench/load/driver.hpp"
#include "client/connection.hpp"
#include "tls/tls_context.hpp"
#include "protocol/messages.hpp"

namespace tally::load {

const char* to_string(op::type t) noexcept {
  switch (t) {
  case op::type::read:
    return "read";
  case op::type::update:
    return "update";
  case op::type::txn:
    return "txn";
  }
  return "?";
}

std::string bucket_of(const workload& w, std::uint64_t k) {
  if (w.buckets <= 1)
    return w.bucket;
  return w.bucket + "-" + std::to_string(k % w.buckets);
}

std::string key_of(std::uint64_t k) { return "k" + std::to_string(k); }

std::string element_of(std::uint64_t i) { return "e" + std::to_string(i); }

std::string register_value_of(std::uint64_t id) { return "v" + std::to_string(id); }

std::unique_ptr<driver> make_antidote_driver(const target& t,
                                             const workload& w,
                                             std::uint64_t salt);
std::unique_ptr<driver> make_redis_driver(const target& t, const workload& w,
                                          std::uint64_t salt);

std::unique_ptr<driver> make_driver(const target& t, const workload& w,
                                    std::uint64_t salt) {
  if (t.protocol == target::kind::redis)
    return make_redis_driver(t, w, salt);
  return make_antidote_driver(t, w, salt);
}

namespace {

std::string kind_of(const error& e) { return std::string(to_string(e.code())); }

class antidote_driver final : public driver {
public:
  antidote_driver(const target& t, const workload& w, std::uint64_t salt)
    : target_(t), w_(w) {
    std::random_device rd;
    client_id_ = ((static_cast<std::uint64_t>(rd()) << 32) ^ rd())
                 ^ (salt * 0x9E3779B97F4A7C15ULL);
  }

  std::string connect() override {
    if (target_.tls && !tls_) {
      if (w_.tls_ca.empty())
        return target_.text + " is a TLS target: give the CA of the node's certificate "
                              "(--tls-ca FILE)";
      auto ctx = tls_context::client({w_.tls_ca, w_.tls_cert, w_.tls_key, ""});
      if (!ctx)
        return ctx.err().to_string();
      tls_.emplace(std::move(*ctx));
    }
    auto c = connection::open(target_.host, target_.port, timeout(),
                              tls_ ? &*tls_ : nullptr);
    if (!c)
      return c.err().to_string();
    conn_.emplace(std::move(*c));
    return {};
  }

  std::string send(const op& o) override {
    if (o.kind == op::type::read) {
      static_read_objects_req req;
      req.objects = objects(o.read_keys);
      last_ = encode_request(req);
    } else {
      static_update_objects_req req;
      req.updates = updates(o);
      last_ = encode_request(req);
    }
    auto bytes = encode_frame(last_);
    if (!bytes)
      return bytes.err().to_string();
    last_bytes_ = std::move(*bytes);
    return write(last_bytes_);
  }

  std::string send_again() override {
    return write(last_bytes_);
  }

  outcome receive() override {
    auto f = conn_->receive(deadline());
    if (!f)
      return lost(f.err());
    auto r = decode_response(f->code, f->body);
    if (!r)
      return {false, "corrupt", false};
    return judge(*r);
  }

  outcome transact(const op& o) override {
    outcome out = run_tx(o, nullptr);
    if (out.ok && o.dup)
      out = run_tx(o, &last_tx_updates_);
    return out;
  }

  std::string read_values(const std::vector<std::uint64_t>& keys,
                          std::vector<std::int64_t>& out) override {
    out.clear();
    for (std::size_t i = 0; i < keys.size(); i += 200) {
      std::vector<std::uint64_t> part(
        keys.begin() + static_cast<std::ptrdiff_t>(i),
        keys.begin()
          + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + 200)));
      static_read_objects_req req;
      req.objects = objects(part);
      auto r = call(req);
      if (!r)
        return r.err().to_string();
      auto* s = std::get_if<static_read_objects_resp>(&*r);
      if (!s || !s->objects.success)
        return "read-back failed: " + describe(*r);
      for (auto& v : s->objects.values) {
        const auto* n = std::get_if<std::int64_t>(&v);
        if (!n)
          return "read-back: a key of the counter workload is no counter";
        out.push_back(*n);
      }
    }
    return {};
  }

  std::string read_typed(const std::vector<std::uint64_t>& keys,
                         std::vector<std::vector<std::string>>& out) override {
    out.clear();
    for (std::size_t i = 0; i < keys.size(); i += 200) {
      std::vector<std::uint64_t> part(
        keys.begin() + static_cast<std::ptrdiff_t>(i),
        keys.begin() + static_cast<std::ptrdiff_t>(std::min(keys.size(), i + 200)));
      static_read_objects_req req;
      req.objects = objects(part);
      auto r = call(req);
      if (!r)
        return r.err().to_string();
      auto* s = std::get_if<static_read_objects_resp>(&*r);
      if (!s || !s->objects.success)
        return "read-back failed: " + describe(*r);
      for (auto& v : s->objects.values) {
        if (auto* elements = std::get_if<std::vector<std::string>>(&v))
          out.push_back(*elements);
        else if (auto* value = std::get_if<std::string>(&v))
          out.push_back({*value});
        else
          return "read-back: a key of the " + std::string(to_string(w_.type))
                 + " workload holds another type";
      }
    }
    return {};
  }

  void close() override {
    conn_.reset();
  }

private:
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(w_.timeout_ms);
  }
  client_clock::time_point deadline() const {
    return client_clock::now() + timeout();
  }

  crdt_type object_type() const {
    switch (w_.type) {
    case data_kind::set:
      return crdt_type::orset;
    case data_kind::reg:
      return crdt_type::lwwreg;
    case data_kind::counter:
      break;
    }
    return crdt_type::counter;
  }

  std::vector<bound_object> objects(const std::vector<std::uint64_t>& keys) {
    std::vector<bound_object> v;
    v.reserve(keys.size());
    for (auto k : keys)
      v.push_back({object_key{bucket_of(w_, k), key_of(k)}, object_type()});
    return v;
  }

  std::vector<update_op> updates(const op& o) {
    std::vector<update_op> v;
    v.reserve(o.update_keys.size());
    for (std::size_t i = 0; i < o.update_keys.size(); ++i) {
      const auto k = o.update_keys[i];
      bound_object obj{object_key{bucket_of(w_, k), key_of(k)}, object_type()};
      if (w_.type == data_kind::counter) {
        counter_op c;
        c.update.delta = w_.inc;
        if (w_.op_ids)
          c.id = op_id{client_id_, ++seq_};
        v.push_back({std::move(obj), c});
        continue;
      }
      // Sets and registers carry no op id: a resend reads as once.
      const typed_write& t = o.writes.at(i);
      crdt_update u = register_update{register_assign{register_value_of(t.item), std::nullopt}};
      if (w_.type == data_kind::set) {
        std::vector<std::string> e{element_of(t.item)};
        u = t.remove ? set_update{set_remove{std::move(e)}} : set_update{set_add{std::move(e)}};
      }
      v.push_back({std::move(obj), crdt_op{std::move(u)}});
    }
    return v;
  }

  std::string write(const std::string& bytes) {
    auto st = conn_->send_bytes(bytes, deadline());
    if (!st)
      return st.err().to_string();
    return {};
  }

  outcome lost(const error& e) {
    return {false, "io:" + kind_of(e), true};
  }

  static std::string describe(const response& r) {
    if (auto* e = std::get_if<error_resp>(&r))
      return e->err.to_string();
    return "unexpected reply";
  }

  outcome judge(const response& r) {
    if (auto* e = std::get_if<error_resp>(&r))
      return {false, kind_of(e->err), false};
    if (auto* c = std::get_if<commit_resp>(&r)) {
      if (!c->success)
        return {false, std::string(to_string(errc_from_wire_error(c->error_code))),
                false};
      return {};
    }
    if (auto* s = std::get_if<static_read_objects_resp>(&r)) {
      if (!s->objects.success)
        return {false,
                std::string(to_string(errc_from_wire_error(s->objects.error_code))),
                false};
      return {};
    }
    if (auto* o = std::get_if<operation_resp>(&r)) {
      if (!o->success)
        return {false, std::string(to_string(errc_from_wire_error(o->error_code))),
                false};
      return {};
    }
    if (auto* s = std::get_if<start_transaction_resp>(&r)) {
      if (!s->success)
        return {false, std::string(to_string(errc_from_wire_error(s->error_code))),
                false};
      return {};
    }
    if (auto* s = std::get_if<read_objects_resp>(&r)) {
      if (!s->success)
        return {false, std::string(to_string(errc_from_wire_error(s->error_code))),
                false};
      return {};
    }
    return {false, "corrupt", false};
  }

  expected<response> call(const request& req) {
    auto st = conn_->send(encode_request(req), deadline());
    if (!st)
      return st.err();
    auto f = conn_->receive(deadline());
    if (!f)
      return f.err();
    return decode_response(f->code, f->body);
  }

  outcome call_judged(const request& req, response* keep = nullptr) {
    auto r = call(req);
    if (!r) {
      bool io = r.err().code() != errc::corrupt;
      return {false, io ? "io:" + kind_of(r.err()) : "corrupt", io};
    }
    outcome o = judge(*r);
    if (keep)
      *keep = std::move(*r);
    return o;
  }

  /// start, reads, updates (`reuse`: these exact ops), commit.
  outcome run_tx(const op& o, const std::vector<update_op>* reuse) {
    response r;
    outcome out = call_judged(start_transaction_req{}, &r);
    if (!out.ok)
      return out;
    const std::string desc =
      std::get<start_transaction_resp>(r).transaction_descriptor;
    if (!reuse) {
      for (auto k : o.read_keys) {
        read_objects_req rq{objects({k}), desc};
        out = call_judged(rq);
        if (!out.ok)
          return finish_failed(desc, out);
      }
    }
    if (o.update_keys.empty())
      return call_judged(commit_transaction_req{desc});
    update_objects_req uq;
    uq.updates = reuse ? *reuse : updates(o);
    uq.transaction_descriptor = desc;
    if (!reuse)
      last_tx_updates_ = uq.updates;
    return update_and_commit(uq);
  }

  /// The updates and the commit leave in one write, the commit not waiting
  /// for the update's reply: the like-for-like of the Redis driver's
  /// MULTI/INCRBY.../EXEC in one write. A failed update aborts the
  /// transaction (docs/PROTOCOL.md), so the commit behind it fails too and
  /// nothing of the transaction is stored.
  outcome update_and_commit(const update_objects_req& uq) {
    auto up = encode_frame(encode_request(uq));
    auto commit = encode_frame(encode_request(commit_transaction_req{uq.transaction_descriptor}));
    if (!up || !commit)
      return {false, "corrupt", false};
    if (auto e = write(*up + *commit); !e.empty())
      return {false, "io", true};
    outcome u = receive();
    if (u.connection_lost)
      return u;
    outcome c = receive();
    return u.ok || c.connection_lost ? c : u;
  }

  outcome finish_failed(const std::string& desc, outcome out) {
    if (!out.connection_lost)
      (void)call(abort_transaction_req{desc});
    return out;
  }

  target target_;
  workload w_;
  std::optional<tls_context> tls_; // antidotes:// targets
  std::optional<connection> conn_;
  std::uint64_t client_id_ = 0;
  std::uint64_t seq_ = 0;
  frame last_;
  std::string last_bytes_;
  std::vector<update_op> last_tx_updates_;
};

} // namespace

std::unique_ptr<driver> make_antidote_driver(const target& t,
                                             const workload& w,
                                             std::uint64_t salt) {
  return std::make_unique<antidote_driver>(t, w, salt);
}

} // namespace tally::load
