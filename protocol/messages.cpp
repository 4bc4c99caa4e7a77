#include "protocol/messages.hpp"

#include <algorithm>
#include <climits>
#include <iterator>
#include <limits>
#include <utility>

#include "protocol/antidote.pb.h"
#include "protocol/descriptor.hpp"

namespace tally {

namespace pb = ::tally::antidote_pb;

namespace {

// ---- decoding helpers -----------------------------------------------------

error with_context(const std::string& context, const error& err) {
  return make_error(err.code(), context + ": " + err.message());
}

error missing(std::string_view message, std::string_view field) {
  return make_error(errc::corrupt, "Apb" + std::string{message}
                                     + " lacks required field '"
                                     + std::string{field} + "'");
}

// Parses without the required-field check: the decoders below check every
// field they use themselves, with a message that names it.
template <class Msg>
status parse(Msg& msg, std::string_view body, std::string_view name) {
  if (body.size() > static_cast<std::size_t>(INT_MAX))
    return make_error(errc::invalid_argument,
                      std::string{name} + ": body of "
                        + std::to_string(body.size())
                        + " bytes is larger than protobuf can parse");
  if (!msg.ParsePartialFromArray(body.data(), static_cast<int>(body.size())))
    return make_error(errc::corrupt,
                      std::string{name}
                        + ": body is not a valid protobuf message");
  return {};
}

// An enum field whose value proto2 does not know is parsed into the unknown
// fields, which leaves the field unset. Finds such a value, so the error can
// say "unknown CRDT type 42" instead of "missing type".
template <class Msg>
std::optional<std::uint64_t> unknown_varint(const Msg& msg, int number) {
  const auto& fields = msg.unknown_fields();
  std::optional<std::uint64_t> found;
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number
        && f.type() == google::protobuf::UnknownField::TYPE_VARINT)
      found = f.varint(); // the last occurrence wins, as in proto2
  }
  return found;
}

expected<bound_object> decode_bound_object(const pb::ApbBoundObject& msg) {
  if (!msg.has_key())
    return missing("BoundObject", "key");
  if (!msg.has_bucket())
    return missing("BoundObject", "bucket");
  if (!msg.has_type()) {
    if (auto wire = unknown_varint(msg, pb::ApbBoundObject::kTypeFieldNumber))
      return make_error(errc::invalid_argument,
                        "unknown CRDT type " + std::to_string(*wire));
    return missing("BoundObject", "type");
  }
  bound_object out;
  if (!crdt_type_from_wire(static_cast<std::uint32_t>(msg.type()), out.type))
    return make_error(errc::invalid_argument,
                      "unknown CRDT type " + std::to_string(msg.type()));
  out.key.bucket = msg.bucket();
  out.key.key = msg.key();
  return out;
}

expected<op_id> decode_op_id(const pb::ApbTallyOpId& id) {
  if (!id.has_client())
    return missing("TallyOpId", "client");
  if (!id.has_seq())
    return missing("TallyOpId", "seq");
  return op_id{id.client(), id.seq()};
}

expected<counter_op> decode_counter_op(const pb::ApbCounterUpdate& msg) {
  counter_op out;
  out.update.delta = msg.has_inc() ? msg.inc() : 1;
  if (msg.has_tally_op_id()) {
    auto id = decode_op_id(msg.tally_op_id());
    if (!id)
      return id.err();
    out.id = *id;
  }
  return out;
}

std::string object_name(const bound_object& obj) {
  std::string out = obj.key.bucket;
  out += '/';
  out += obj.key.key;
  return out;
}

// Which field of an ApbUpdateOperation is set; an error unless exactly one.
expected<op_kind> operation_kind(const pb::ApbUpdateOperation& op) {
  std::optional<op_kind> kind;
  int count = 0;
  auto note = [&](bool present, op_kind k) {
    if (present) {
      kind = k;
      ++count;
    }
  };
  note(op.has_counterop(), op_kind::counter);
  note(op.has_setop(), op_kind::set);
  note(op.has_regop(), op_kind::reg);
  note(op.has_mapop(), op_kind::map);
  note(op.has_resetop(), op_kind::reset);
  note(op.has_flagop(), op_kind::flag);
  if (count == 0)
    return make_error(errc::invalid_argument,
                      "ApbUpdateOperation carries no operation");
  if (count > 1)
    return make_error(errc::invalid_argument,
                      "ApbUpdateOperation carries " + std::to_string(count)
                        + " operations; exactly one is allowed");
  return *kind;
}

error not_an_operation_of(op_kind kind, crdt_type type, const std::string& where) {
  return make_error(errc::wrong_type, "a " + std::string{to_string(kind)}
                                        + " operation does not apply to "
                                        + std::string{to_string(type)} + " object "
                                        + where);
}

bool is_set_type(crdt_type t) {
  return t == crdt_type::orset || t == crdt_type::rwset;
}
bool is_register_type(crdt_type t) {
  return t == crdt_type::lwwreg || t == crdt_type::mvreg;
}
bool is_flag_type(crdt_type t) {
  return t == crdt_type::flag_ew || t == crdt_type::flag_dw;
}
bool is_map_type(crdt_type t) {
  return t == crdt_type::gmap || t == crdt_type::rrmap;
}
bool is_counter_type(crdt_type t) {
  return t == crdt_type::counter || t == crdt_type::fatcounter;
}

// AntidoteDB's operation of `type` that `op` encodes (antidote_pb_codec:
// decode_update_operation): counterop -> {increment, N}; setop ADD ->
// {add_all, Adds}, REMOVE -> {remove_all, Rems}; regop -> {assign, V};
// flagop -> enable/disable; resetop -> {reset, {}}; mapop -> {batch,
// {Updates, Removes}} with nested operations by the nested key's type.
expected<crdt_update> decode_operation(crdt_type type, const pb::ApbUpdateOperation& op,
                                       const std::string& where, int depth) {
  if (depth > byte_reader::max_depth)
    return make_error(errc::invalid_argument,
                      "maps nested deeper than " + std::to_string(byte_reader::max_depth)
                        + " levels in " + where);
  auto kind = operation_kind(op);
  if (!kind)
    return kind.err();
  switch (*kind) {
    case op_kind::counter: {
      const std::int64_t inc = op.counterop().has_inc() ? op.counterop().inc() : 1;
      if (type == crdt_type::bcounter) {
        // AntidoteDB's {increment, N} and {decrement, N} of counter_b; the
        // node fills in the replica (its data centre).
        if (depth > 1)
          return make_error(errc::wrong_type, "Tally does not serve bcounter entries in maps ("
                                                + where + ")");
        if (inc >= 0)
          return crdt_update{b_counter_update{
            b_counter_increment{static_cast<std::uint64_t>(inc), 0}}};
        return crdt_update{b_counter_update{b_counter_decrement{
          static_cast<std::uint64_t>(-(inc + 1)) + 1, 0}}};
      }
      if (!is_counter_type(type))
        break;
      if (op.counterop().has_tally_op_id())
        return make_error(errc::invalid_argument,
                          "a counter inside a map carries no op id; the map update does "
                          "(ApbMapUpdate field 100) in "
                            + where);
      return crdt_update{counter_update{inc}};
    }
    case op_kind::set: {
      if (!is_set_type(type))
        break;
      const auto& s = op.setop();
      if (!s.has_optype())
        return missing("SetUpdate", "optype");
      if (s.optype() == pb::ApbSetUpdate::ADD)
        return crdt_update{set_update{set_add{{s.adds().begin(), s.adds().end()}}}};
      return crdt_update{set_update{set_remove{{s.rems().begin(), s.rems().end()}}}};
    }
    case op_kind::reg:
      if (!is_register_type(type))
        break;
      if (!op.regop().has_value())
        return missing("RegUpdate", "value");
      return crdt_update{register_update{register_assign{op.regop().value(), std::nullopt}}};
    case op_kind::flag:
      if (!is_flag_type(type))
        break;
      if (!op.flagop().has_value())
        return missing("FlagUpdate", "value");
      return crdt_update{op.flagop().value() ? flag_update::enable : flag_update::disable};
    case op_kind::reset:
      if (is_set_type(type))
        return crdt_update{set_update{set_reset{}}};
      if (is_register_type(type))
        return crdt_update{register_update{register_reset{}}};
      if (is_flag_type(type))
        return crdt_update{flag_update::reset};
      if (type == crdt_type::rrmap)
        return crdt_update{map_update{{}, {}, true}};
      break;
    case op_kind::map: {
      if (!is_map_type(type))
        break;
      if (depth > 1 && op.mapop().has_tally_op_id())
        return make_error(errc::invalid_argument,
                          "only the outermost map update carries an op id ("
                            + where + ")");
      map_update out;
      for (const auto& nested : op.mapop().updates()) {
        if (!nested.has_key() || !nested.key().has_key() || !nested.key().has_type())
          return missing("MapNestedUpdate", "key");
        if (!nested.has_update())
          return missing("MapNestedUpdate", "update");
        crdt_type t;
        if (!crdt_type_from_wire(static_cast<std::uint32_t>(nested.key().type()), t))
          return make_error(errc::invalid_argument, "unknown CRDT type "
                                                      + std::to_string(nested.key().type()));
        if (!is_supported(t))
          return make_error(errc::wrong_type, "Tally does not serve " + std::string{to_string(t)}
                                                + " entries in maps (" + where + ")");
        auto inner = decode_operation(t, nested.update(), where, depth + 1);
        if (!inner)
          return inner.err();
        out.updates.push_back(keyed_update{map_key{nested.key().key(), t}, std::move(*inner)});
      }
      for (const auto& k : op.mapop().removedkeys()) {
        if (!k.has_key() || !k.has_type())
          return missing("MapKey", "key");
        crdt_type t;
        if (!crdt_type_from_wire(static_cast<std::uint32_t>(k.type()), t))
          return make_error(errc::invalid_argument,
                            "unknown CRDT type " + std::to_string(k.type()));
        out.removes.push_back(map_key{k.key(), t});
      }
      return crdt_update{std::move(out)};
    }
  }
  return not_an_operation_of(*kind, type, where);
}

expected<update_op> decode_update_op(const pb::ApbUpdateOp& msg) {
  if (!msg.has_boundobject())
    return missing("UpdateOp", "boundobject");
  if (!msg.has_operation())
    return missing("UpdateOp", "operation");
  auto object = decode_bound_object(msg.boundobject());
  if (!object)
    return object.err();
  const auto& op = msg.operation();
  auto kind = operation_kind(op);
  if (!kind)
    return kind.err();
  update_op out{std::move(*object), unsupported_op{*kind}};
  if (!out.object.supported())
    return out;
  if (*kind == op_kind::counter && is_counter_type(out.object.type)) {
    auto counter = decode_counter_op(op.counterop());
    if (!counter)
      return counter.err();
    out.op = std::move(*counter);
    return out;
  }
  // AntidoteDB's fat counter has a reset, which Tally does not implement;
  // its PN counter has none.
  if (*kind == op_kind::reset && out.object.type == crdt_type::fatcounter)
    return out;
  auto update = decode_operation(out.object.type, op, object_name(out.object), 1);
  if (!update)
    return update.err();
  crdt_op typed{std::move(*update)};
  if (*kind == op_kind::counter) { // a bcounter's: its op id too
    auto counter = decode_counter_op(op.counterop());
    if (!counter)
      return counter.err();
    typed.id = counter->id;
  }
  if (*kind == op_kind::map && op.mapop().has_tally_op_id()) {
    auto id = decode_op_id(op.mapop().tally_op_id());
    if (!id)
      return id.err();
    typed.id = *id;
  }
  out.op = std::move(typed);
  return out;
}

expected<std::vector<bound_object>>
decode_objects(const google::protobuf::RepeatedPtrField<pb::ApbBoundObject>& in,
               std::string_view request) {
  std::vector<bound_object> out;
  out.reserve(static_cast<std::size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    auto obj = decode_bound_object(in.Get(i));
    if (!obj)
      return with_context(std::string{request} + ": object "
                            + std::to_string(i),
                          obj.err());
    out.push_back(std::move(*obj));
  }
  return out;
}

expected<std::vector<update_op>>
decode_updates(const google::protobuf::RepeatedPtrField<pb::ApbUpdateOp>& in,
               std::string_view request) {
  std::vector<update_op> out;
  out.reserve(static_cast<std::size_t>(in.size()));
  for (int i = 0; i < in.size(); ++i) {
    auto upd = decode_update_op(in.Get(i));
    if (!upd)
      return with_context(std::string{request} + ": update "
                            + std::to_string(i),
                          upd.err());
    out.push_back(std::move(*upd));
  }
  return out;
}

start_transaction_req decode_start(const pb::ApbStartTransaction& msg) {
  start_transaction_req out;
  if (msg.has_timestamp() && !is_no_snapshot(msg.timestamp()))
    out.timestamp = msg.timestamp();
  // msg.properties() (read_write, red_blue, locks) is ignored on purpose:
  // counters commute, so Tally needs neither locks nor red transactions.
  return out;
}

// ---- per-request decoders ---------------------------------------------------

expected<request> decode_read_objects(std::string_view body) {
  pb::ApbReadObjects msg;
  if (auto st = parse(msg, body, "ReadObjects"); !st)
    return st.err();
  if (!msg.has_transaction_descriptor())
    return with_context("ReadObjects",
                        missing("ReadObjects", "transaction_descriptor"));
  auto objects = decode_objects(msg.boundobjects(), "ReadObjects");
  if (!objects)
    return objects.err();
  return request{read_objects_req{std::move(*objects),
                                  msg.transaction_descriptor()}};
}

expected<request> decode_update_objects(std::string_view body) {
  pb::ApbUpdateObjects msg;
  if (auto st = parse(msg, body, "UpdateObjects"); !st)
    return st.err();
  if (!msg.has_transaction_descriptor())
    return with_context("UpdateObjects",
                        missing("UpdateObjects", "transaction_descriptor"));
  auto updates = decode_updates(msg.updates(), "UpdateObjects");
  if (!updates)
    return updates.err();
  return request{update_objects_req{std::move(*updates),
                                    msg.transaction_descriptor()}};
}

expected<request> decode_start_transaction(std::string_view body) {
  pb::ApbStartTransaction msg;
  if (auto st = parse(msg, body, "StartTransaction"); !st)
    return st.err();
  return request{decode_start(msg)};
}

template <class Msg, class Req>
expected<request> decode_descriptor_only(std::string_view body,
                                         std::string_view name) {
  Msg msg;
  if (auto st = parse(msg, body, name); !st)
    return st.err();
  if (!msg.has_transaction_descriptor())
    return with_context(std::string{name},
                        missing(name, "transaction_descriptor"));
  return request{Req{msg.transaction_descriptor()}};
}

expected<request> decode_static_update_objects(std::string_view body) {
  pb::ApbStaticUpdateObjects msg;
  if (auto st = parse(msg, body, "StaticUpdateObjects"); !st)
    return st.err();
  if (!msg.has_transaction())
    return with_context("StaticUpdateObjects",
                        missing("StaticUpdateObjects", "transaction"));
  auto updates = decode_updates(msg.updates(), "StaticUpdateObjects");
  if (!updates)
    return updates.err();
  return request{static_update_objects_req{decode_start(msg.transaction()),
                                           std::move(*updates)}};
}

expected<request> decode_static_read_objects(std::string_view body) {
  pb::ApbStaticReadObjects msg;
  if (auto st = parse(msg, body, "StaticReadObjects"); !st)
    return st.err();
  if (!msg.has_transaction())
    return with_context("StaticReadObjects",
                        missing("StaticReadObjects", "transaction"));
  auto objects = decode_objects(msg.objects(), "StaticReadObjects");
  if (!objects)
    return objects.err();
  return request{static_read_objects_req{decode_start(msg.transaction()),
                                         std::move(*objects)}};
}

expected<request> decode_admin(std::string_view body) {
  pb::ApbTallyAdminReq msg;
  if (auto st = parse(msg, body, "TallyAdminReq"); !st)
    return st.err();
  if (!msg.has_command())
    return with_context("TallyAdminReq", missing("TallyAdminReq", "command"));
  admin_req out;
  out.command = msg.command();
  out.args.assign(msg.args().begin(), msg.args().end());
  if (auto st = check_admin_req(out); !st)
    return st.err();
  return request{std::move(out)};
}

// RFC 3629 UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf; // range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0)
        lo = 0xa0;
      if (c == 0xed)
        hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0)
        lo = 0x90;
      if (c == 0xf4)
        hi = 0x8f;
    } else {
      return false;
    }
    if (text.size() - i <= n)
      return false;
    for (std::size_t k = 1; k <= n; ++k) {
      auto b = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf))
        return false;
    }
    i += n + 1;
  }
  return true;
}

// ---- encoding helpers -------------------------------------------------------

void fill(pb::ApbBoundObject& out, const bound_object& in) {
  out.set_key(in.key.key);
  out.set_bucket(in.key.bucket);
  out.set_type(static_cast<pb::CRDT_type>(in.type));
}

void fill(pb::ApbUpdateOperation& out, const unsupported_op& in) {
  switch (in.kind) {
    case op_kind::counter: out.mutable_counterop(); break;
    case op_kind::set:
      out.mutable_setop()->set_optype(pb::ApbSetUpdate::ADD);
      break;
    case op_kind::reg: out.mutable_regop()->set_value(""); break;
    case op_kind::map: out.mutable_mapop(); break;
    case op_kind::reset: out.mutable_resetop(); break;
    case op_kind::flag: out.mutable_flagop()->set_value(false); break;
  }
}

void fill(pb::ApbUpdateOperation& out, const counter_op& in) {
  auto* counter = out.mutable_counterop();
  // +1 is sent explicitly too: "absent means +1" is a server rule that not
  // every decoder (e.g. an older Tally) needs to know.
  counter->set_inc(in.update.delta);
  if (in.id) {
    auto* id = counter->mutable_tally_op_id();
    id->set_client(in.id->client);
    id->set_seq(in.id->seq);
  }
}

void fill_operation(pb::ApbUpdateOperation& out, const crdt_update& in) {
  std::visit(
    [&out](const auto& u) {
      using T = std::decay_t<decltype(u)>;
      if constexpr (std::is_same_v<T, counter_update>) {
        out.mutable_counterop()->set_inc(u.delta);
      } else if constexpr (std::is_same_v<T, set_update>) {
        if (const auto* add = std::get_if<set_add>(&u)) {
          auto* op = out.mutable_setop();
          op->set_optype(pb::ApbSetUpdate::ADD);
          for (const auto& e : add->elements)
            op->add_adds(e);
        } else if (const auto* rm = std::get_if<set_remove>(&u)) {
          auto* op = out.mutable_setop();
          op->set_optype(pb::ApbSetUpdate::REMOVE);
          for (const auto& e : rm->elements)
            op->add_rems(e);
        } else {
          out.mutable_resetop();
        }
      } else if constexpr (std::is_same_v<T, register_update>) {
        if (const auto* a = std::get_if<register_assign>(&u))
          out.mutable_regop()->set_value(a->value);
        else
          out.mutable_resetop();
      } else if constexpr (std::is_same_v<T, flag_update>) {
        if (u == flag_update::reset)
          out.mutable_resetop();
        else
          out.mutable_flagop()->set_value(u == flag_update::enable);
      } else if constexpr (std::is_same_v<T, map_update>) {
        if (u.reset) {
          out.mutable_resetop();
          return;
        }
        auto* op = out.mutable_mapop();
        for (const auto& k : u.updates) {
          auto* nested = op->add_updates();
          nested->mutable_key()->set_key(k.key.key);
          nested->mutable_key()->set_type(static_cast<pb::CRDT_type>(k.key.type));
          fill_operation(*nested->mutable_update(), k.update);
        }
        for (const auto& k : u.removes) {
          auto* key = op->add_removedkeys();
          key->set_key(k.key);
          key->set_type(static_cast<pb::CRDT_type>(k.type));
        }
      } else {
        // b_counter_update: an increment or decrement as a signed inc (a
        // transfer has no AntidoteDB encoding: sent as an increment of 0).
        std::int64_t inc = 0;
        if (const auto* i = std::get_if<b_counter_increment>(&u))
          inc = static_cast<std::int64_t>(i->amount);
        else if (const auto* d = std::get_if<b_counter_decrement>(&u))
          inc = -static_cast<std::int64_t>(d->amount);
        out.mutable_counterop()->set_inc(inc);
      }
    },
    in);
}

void fill(pb::ApbUpdateOperation& out, const crdt_op& in) {
  fill_operation(out, in.update);
  pb::ApbTallyOpId* id = nullptr;
  if (in.id && out.has_counterop())
    id = out.mutable_counterop()->mutable_tally_op_id();
  else if (in.id && out.has_mapop())
    id = out.mutable_mapop()->mutable_tally_op_id();
  if (id) {
    id->set_client(in.id->client);
    id->set_seq(in.id->seq);
  }
}

void fill(pb::ApbUpdateOp& out, const update_op& in) {
  fill(*out.mutable_boundobject(), in.object);
  std::visit([&](const auto& op) { fill(*out.mutable_operation(), op); },
             in.op);
}

void fill(pb::ApbStartTransaction& out, const start_transaction_req& in) {
  if (in.timestamp)
    out.set_timestamp(*in.timestamp);
}

template <class Msg>
std::string serialize(const Msg& msg) {
  std::string out;
  // Every required field is set by the fill functions; the partial variant
  // skips a second check.
  msg.SerializePartialToString(&out);
  return out;
}

template <class Msg, class Fill>
frame make_frame(msg_code code, Fill fill_msg) {
  Msg msg;
  fill_msg(msg);
  return frame{static_cast<std::uint8_t>(code), serialize(msg)};
}

// The type a value travels as when the response does not say.
crdt_type default_type(const crdt_value& v) {
  switch (v.index()) {
    case 0: return crdt_type::counter;
    case 1: return crdt_type::flag_ew;
    case 2: return crdt_type::lwwreg;
    case 3: return crdt_type::orset;
    default: return crdt_type::rrmap;
  }
}

void fill_value(pb::ApbReadObjectResp& out, crdt_type type, const crdt_value& value) {
  std::visit(
    [&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, std::int64_t>) {
        auto* counter = out.mutable_counter();
        counter->set_value(clamp_counter_value(v));
        counter->set_tally_value(v);
      } else if constexpr (std::is_same_v<T, bool>) {
        out.mutable_flag()->set_value(v);
      } else if constexpr (std::is_same_v<T, std::string>) {
        out.mutable_reg()->set_value(v);
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        if (type == crdt_type::mvreg) {
          auto* reg = out.mutable_mvreg();
          for (const auto& x : v)
            reg->add_values(x);
        } else {
          auto* set = out.mutable_set();
          for (const auto& x : v)
            set->add_value(x);
        }
      } else {
        auto* map = out.mutable_map();
        for (const auto& e : v.entries) {
          auto* entry = map->add_entries();
          entry->mutable_key()->set_key(e.key.key);
          entry->mutable_key()->set_type(static_cast<pb::CRDT_type>(e.key.type));
          fill_value(*entry->mutable_value(), e.key.type, e.value);
        }
      }
    },
    value);
}

void fill(pb::ApbReadObjectsResp& out, const read_objects_resp& in) {
  out.set_success(in.success);
  for (std::size_t i = 0; i < in.values.size(); ++i)
    fill_value(*out.add_objects(),
               i < in.types.size() ? in.types[i] : default_type(in.values[i]),
               in.values[i]);
  if (!in.success)
    out.set_errorcode(in.error_code);
}

void fill(pb::ApbCommitResp& out, const commit_resp& in) {
  out.set_success(in.success);
  if (in.success)
    out.set_commit_time(in.commit_time);
  else
    out.set_errorcode(in.error_code);
}

// ---- response decoders -------------------------------------------------------

struct typed_value {
  crdt_type type;
  crdt_value value;
};

expected<typed_value> decode_value(const pb::ApbReadObjectResp& obj,
                                   const std::string& context, int depth) {
  if (obj.has_counter()) {
    const auto& counter = obj.counter();
    if (counter.has_tally_value())
      return typed_value{crdt_type::counter, std::int64_t{counter.tally_value()}};
    if (counter.has_value())
      return typed_value{crdt_type::counter, std::int64_t{counter.value()}};
    return with_context(context, missing("GetCounterResp", "value"));
  }
  if (obj.has_set())
    return typed_value{crdt_type::orset,
                       std::vector<std::string>{obj.set().value().begin(),
                                                obj.set().value().end()}};
  if (obj.has_reg()) {
    if (!obj.reg().has_value())
      return with_context(context, missing("GetRegResp", "value"));
    return typed_value{crdt_type::lwwreg, obj.reg().value()};
  }
  if (obj.has_mvreg())
    return typed_value{crdt_type::mvreg,
                       std::vector<std::string>{obj.mvreg().values().begin(),
                                                obj.mvreg().values().end()}};
  if (obj.has_flag()) {
    if (!obj.flag().has_value())
      return with_context(context, missing("GetFlagResp", "value"));
    return typed_value{crdt_type::flag_ew, obj.flag().value()};
  }
  if (obj.has_map()) {
    if (depth > byte_reader::max_depth)
      return make_error(errc::corrupt, context + ": maps nested deeper than "
                                         + std::to_string(byte_reader::max_depth));
    map_value m;
    for (const auto& e : obj.map().entries()) {
      if (!e.has_key() || !e.key().has_key() || !e.key().has_type())
        return with_context(context, missing("MapEntry", "key"));
      if (!e.has_value())
        return with_context(context, missing("MapEntry", "value"));
      crdt_type t;
      if (!crdt_type_from_wire(static_cast<std::uint32_t>(e.key().type()), t))
        return make_error(errc::corrupt, context + ": unknown CRDT type "
                                           + std::to_string(e.key().type()));
      auto inner = decode_value(e.value(), context, depth + 1);
      if (!inner)
        return inner.err();
      m.entries.push_back(map_entry_value{map_key{e.key().key(), t}, std::move(inner->value)});
    }
    return typed_value{crdt_type::rrmap, std::move(m)};
  }
  return make_error(errc::corrupt, context + ": ApbReadObjectResp carries no value");
}

expected<read_objects_resp> decode_read_objects_resp(
  const pb::ApbReadObjectsResp& msg, std::string_view name) {
  if (!msg.has_success())
    return with_context(std::string{name}, missing("ReadObjectsResp", "success"));
  read_objects_resp out;
  out.success = msg.success();
  out.error_code = msg.has_errorcode() ? msg.errorcode() : 0;
  out.values.reserve(static_cast<std::size_t>(msg.objects_size()));
  for (int i = 0; i < msg.objects_size(); ++i) {
    auto v = decode_value(msg.objects(i), std::string{name} + ": object " + std::to_string(i), 1);
    if (!v)
      return v.err();
    out.values.push_back(std::move(v->value));
    out.types.push_back(v->type);
  }
  return out;
}

expected<commit_resp> decode_commit_resp(const pb::ApbCommitResp& msg,
                                         std::string_view name) {
  if (!msg.has_success())
    return with_context(std::string{name}, missing("CommitResp", "success"));
  commit_resp out;
  out.success = msg.success();
  out.commit_time = msg.commit_time();
  out.error_code = msg.has_errorcode() ? msg.errorcode() : 0;
  return out;
}

} // namespace

// ---- public functions --------------------------------------------------------

std::string_view to_string(op_kind kind) noexcept {
  switch (kind) {
    case op_kind::counter: return "counter";
    case op_kind::set: return "set";
    case op_kind::reg: return "register";
    case op_kind::map: return "map";
    case op_kind::reset: return "reset";
    case op_kind::flag: return "flag";
  }
  return "unknown";
}

status check_supported(const bound_object& object) {
  if (object.supported())
    return {};
  return make_error(errc::wrong_type,
                    "Tally does not serve " + std::string{to_string(object.type)}
                      + " objects; "
                      + object_name(object) + " was sent as a "
                      + std::string{to_string(object.type)});
}

namespace {

bool same_update(const crdt_update& a, const crdt_update& b);

bool same_map_update(const map_update& a, const map_update& b) {
  if (a.reset != b.reset || a.removes != b.removes || a.updates.size() != b.updates.size())
    return false;
  for (std::size_t i = 0; i < a.updates.size(); ++i)
    if (a.updates[i].key != b.updates[i].key
        || !same_update(a.updates[i].update, b.updates[i].update))
      return false;
  return true;
}

bool same_update(const crdt_update& a, const crdt_update& b) {
  if (a.index() != b.index())
    return false;
  return std::visit(
    [&b](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      const auto& y = std::get<T>(b);
      if constexpr (std::is_same_v<T, counter_update>) {
        return x.delta == y.delta;
      } else if constexpr (std::is_same_v<T, flag_update>) {
        return x == y;
      } else if constexpr (std::is_same_v<T, set_update>) {
        if (x.index() != y.index())
          return false;
        if (const auto* add = std::get_if<set_add>(&x))
          return add->elements == std::get<set_add>(y).elements;
        if (const auto* rm = std::get_if<set_remove>(&x))
          return rm->elements == std::get<set_remove>(y).elements;
        return true;
      } else if constexpr (std::is_same_v<T, register_update>) {
        if (x.index() != y.index())
          return false;
        if (const auto* as = std::get_if<register_assign>(&x))
          return as->value == std::get<register_assign>(y).value
                 && as->timestamp == std::get<register_assign>(y).timestamp;
        return true;
      } else if constexpr (std::is_same_v<T, map_update>) {
        return same_map_update(x, y);
      } else {
        if (x.index() != y.index())
          return false;
        if (const auto* i = std::get_if<b_counter_increment>(&x))
          return i->amount == std::get<b_counter_increment>(y).amount;
        if (const auto* d = std::get_if<b_counter_decrement>(&x))
          return d->amount == std::get<b_counter_decrement>(y).amount;
        return false; // transfers: never decoded
      }
    },
    a);
}

} // namespace

bool operator==(const crdt_op& a, const crdt_op& b) {
  return a.id == b.id && same_update(a.update, b.update);
}

std::vector<crdt_type> types_of(const std::vector<bound_object>& objects) {
  std::vector<crdt_type> out;
  out.reserve(objects.size());
  for (const auto& o : objects)
    out.push_back(o.type);
  return out;
}

status check_supported(const update_op& update) {
  if (auto st = check_supported(update.object); !st)
    return st;
  if (const auto* op = std::get_if<unsupported_op>(&update.op))
    return make_error(errc::wrong_type,
                      "Tally does not implement the " +
                        std::string{to_string(op->kind)} + " operation of "
                        + std::string{to_string(update.object.type)}
                        + " objects (" + object_name(update.object) + ")");
  return {};
}

status check_admin_req(const admin_req& req) {
  auto bad = [](std::string what) {
    return make_error(errc::invalid_argument, "TallyAdminReq: " + what);
  };
  if (req.command.empty())
    return bad("the command is empty");
  if (req.command.size() > max_admin_command_size)
    return bad("command of " + std::to_string(req.command.size())
               + " bytes; at most " + std::to_string(max_admin_command_size)
               + " are allowed");
  if (!valid_utf8(req.command))
    return bad("the command is not valid UTF-8");
  if (req.args.size() > max_admin_args)
    return bad(std::to_string(req.args.size()) + " arguments; at most "
               + std::to_string(max_admin_args) + " are allowed");
  for (std::size_t i = 0; i < req.args.size(); ++i) {
    if (req.args[i].size() > max_admin_arg_size)
      return bad("argument " + std::to_string(i) + " of "
                 + std::to_string(req.args[i].size()) + " bytes; at most "
                 + std::to_string(max_admin_arg_size) + " are allowed");
    if (!valid_utf8(req.args[i]))
      return bad("argument " + std::to_string(i) + " is not valid UTF-8");
  }
  return {};
}

msg_code code_of(const request& req) noexcept {
  static constexpr msg_code codes[] = {
    msg_code::read_objects,          msg_code::update_objects,
    msg_code::start_transaction,     msg_code::abort_transaction,
    msg_code::commit_transaction,    msg_code::static_update_objects,
    msg_code::static_read_objects,   msg_code::tally_admin_req,
  };
  static_assert(std::size(codes) == std::variant_size_v<request>);
  return codes[req.index()];
}

expected<request> decode_request(std::uint8_t code, std::string_view body) {
  auto known = msg_code_from_wire(code);
  if (!known)
    return make_error(errc::unavailable,
                      "unknown message code " + std::to_string(code));
  switch (*known) {
    case msg_code::read_objects: return decode_read_objects(body);
    case msg_code::update_objects: return decode_update_objects(body);
    case msg_code::start_transaction: return decode_start_transaction(body);
    case msg_code::abort_transaction:
      return decode_descriptor_only<pb::ApbAbortTransaction,
                                    abort_transaction_req>(
        body, "AbortTransaction");
    case msg_code::commit_transaction:
      return decode_descriptor_only<pb::ApbCommitTransaction,
                                    commit_transaction_req>(
        body, "CommitTransaction");
    case msg_code::static_update_objects:
      return decode_static_update_objects(body);
    case msg_code::static_read_objects: return decode_static_read_objects(body);
    case msg_code::tally_admin_req: return decode_admin(body);
    default: break;
  }
  return make_error(errc::unavailable,
                    "message code " + std::to_string(code) + " ("
                      + std::string{to_string(*known)}
                      + ") is not a request a Tally server serves");
}

frame encode_request(const request& req) {
  struct visitor {
    frame operator()(const read_objects_req& r) const {
      return make_frame<pb::ApbReadObjects>(
        msg_code::read_objects, [&](pb::ApbReadObjects& m) {
          for (const auto& obj : r.objects)
            fill(*m.add_boundobjects(), obj);
          m.set_transaction_descriptor(r.transaction_descriptor);
        });
    }
    frame operator()(const update_objects_req& r) const {
      return make_frame<pb::ApbUpdateObjects>(
        msg_code::update_objects, [&](pb::ApbUpdateObjects& m) {
          for (const auto& upd : r.updates)
            fill(*m.add_updates(), upd);
          m.set_transaction_descriptor(r.transaction_descriptor);
        });
    }
    frame operator()(const start_transaction_req& r) const {
      return make_frame<pb::ApbStartTransaction>(
        msg_code::start_transaction,
        [&](pb::ApbStartTransaction& m) { fill(m, r); });
    }
    frame operator()(const abort_transaction_req& r) const {
      return make_frame<pb::ApbAbortTransaction>(
        msg_code::abort_transaction, [&](pb::ApbAbortTransaction& m) {
          m.set_transaction_descriptor(r.transaction_descriptor);
        });
    }
    frame operator()(const commit_transaction_req& r) const {
      return make_frame<pb::ApbCommitTransaction>(
        msg_code::commit_transaction, [&](pb::ApbCommitTransaction& m) {
          m.set_transaction_descriptor(r.transaction_descriptor);
        });
    }
    frame operator()(const static_update_objects_req& r) const {
      return make_frame<pb::ApbStaticUpdateObjects>(
        msg_code::static_update_objects, [&](pb::ApbStaticUpdateObjects& m) {
          fill(*m.mutable_transaction(), r.transaction);
          for (const auto& upd : r.updates)
            fill(*m.add_updates(), upd);
        });
    }
    frame operator()(const static_read_objects_req& r) const {
      return make_frame<pb::ApbStaticReadObjects>(
        msg_code::static_read_objects, [&](pb::ApbStaticReadObjects& m) {
          fill(*m.mutable_transaction(), r.transaction);
          for (const auto& obj : r.objects)
            fill(*m.add_objects(), obj);
        });
    }
    frame operator()(const admin_req& r) const {
      return make_frame<pb::ApbTallyAdminReq>(
        msg_code::tally_admin_req, [&](pb::ApbTallyAdminReq& m) {
          m.set_command(r.command);
          for (const auto& arg : r.args)
            m.add_args(arg);
        });
    }
  };
  return std::visit(visitor{}, req);
}

wire_error to_wire_error(errc code) noexcept {
  switch (code) {
    case errc::aborted:
    case errc::gave_way: return wire_error::aborted;
    case errc::timeout: return wire_error::timeout;
    case errc::no_permissions: return wire_error::no_permissions;
    default: return wire_error::unknown;
  }
}

errc errc_from_wire_error(std::uint32_t code) noexcept {
  switch (code) {
    case static_cast<std::uint32_t>(wire_error::timeout): return errc::timeout;
    case static_cast<std::uint32_t>(wire_error::aborted): return errc::aborted;
    case static_cast<std::uint32_t>(wire_error::no_permissions): return errc::no_permissions;
    default: return errc::unavailable;
  }
}

std::int32_t clamp_counter_value(std::int64_t value) noexcept {
  constexpr std::int64_t lo = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t hi = std::numeric_limits<std::int32_t>::max();
  return static_cast<std::int32_t>(std::clamp(value, lo, hi));
}

msg_code code_of(const response& resp) noexcept {
  static constexpr msg_code codes[] = {
    msg_code::error_resp,        msg_code::operation_resp,
    msg_code::start_transaction_resp, msg_code::read_objects_resp,
    msg_code::commit_resp,       msg_code::static_read_objects_resp,
    msg_code::tally_admin_resp,
  };
  static_assert(std::size(codes) == std::variant_size_v<response>);
  return codes[resp.index()];
}

frame encode_response(const response& resp) {
  struct visitor {
    frame operator()(const error_resp& r) const {
      return make_frame<pb::ApbErrorResp>(
        msg_code::error_resp, [&](pb::ApbErrorResp& m) {
          m.set_errmsg(r.err.message());
          m.set_errcode(static_cast<std::uint32_t>(to_wire_error(r.err.code())));
          m.set_tally_errc(static_cast<std::uint32_t>(r.err.code()));
        });
    }
    frame operator()(const operation_resp& r) const {
      return make_frame<pb::ApbOperationResp>(
        msg_code::operation_resp, [&](pb::ApbOperationResp& m) {
          m.set_success(r.success);
          if (!r.success)
            m.set_errorcode(r.error_code);
        });
    }
    frame operator()(const start_transaction_resp& r) const {
      return make_frame<pb::ApbStartTransactionResp>(
        msg_code::start_transaction_resp, [&](pb::ApbStartTransactionResp& m) {
          m.set_success(r.success);
          if (r.success)
            m.set_transaction_descriptor(r.transaction_descriptor);
          else
            m.set_errorcode(r.error_code);
        });
    }
    frame operator()(const read_objects_resp& r) const {
      return make_frame<pb::ApbReadObjectsResp>(
        msg_code::read_objects_resp,
        [&](pb::ApbReadObjectsResp& m) { fill(m, r); });
    }
    frame operator()(const commit_resp& r) const {
      return make_frame<pb::ApbCommitResp>(
        msg_code::commit_resp, [&](pb::ApbCommitResp& m) { fill(m, r); });
    }
    frame operator()(const static_read_objects_resp& r) const {
      return make_frame<pb::ApbStaticReadObjectsResp>(
        msg_code::static_read_objects_resp,
        [&](pb::ApbStaticReadObjectsResp& m) {
          fill(*m.mutable_objects(), r.objects);
          fill(*m.mutable_committime(), r.commit);
        });
    }
    frame operator()(const admin_resp& r) const {
      return make_frame<pb::ApbTallyAdminResp>(
        msg_code::tally_admin_resp, [&](pb::ApbTallyAdminResp& m) {
          m.set_success(r.success);
          if (!r.text.empty())
            m.set_text(r.text);
          if (!r.success)
            m.set_errorcode(r.error_code);
        });
    }
  };
  return std::visit(visitor{}, resp);
}

expected<response> decode_response(std::uint8_t code, std::string_view body) {
  auto known = msg_code_from_wire(code);
  if (!known)
    return make_error(errc::unavailable,
                      "unknown message code " + std::to_string(code));
  switch (*known) {
    case msg_code::error_resp: {
      pb::ApbErrorResp m;
      if (auto st = parse(m, body, "ErrorResp"); !st)
        return st.err();
      if (!m.has_errcode())
        return with_context("ErrorResp", missing("ErrorResp", "errcode"));
      // errmsg is required too, but a missing message loses nothing the
      // client can act on: accept it as empty.
      auto code_value = m.has_tally_errc() && is_known_errc(m.tally_errc())
                          ? static_cast<errc>(m.tally_errc())
                          : errc_from_wire_error(m.errcode());
      return response{error_resp{make_error(code_value, m.errmsg())}};
    }
    case msg_code::operation_resp: {
      pb::ApbOperationResp m;
      if (auto st = parse(m, body, "OperationResp"); !st)
        return st.err();
      if (!m.has_success())
        return with_context("OperationResp",
                            missing("OperationResp", "success"));
      return response{operation_resp{m.success(),
                                     m.has_errorcode() ? m.errorcode() : 0}};
    }
    case msg_code::start_transaction_resp: {
      pb::ApbStartTransactionResp m;
      if (auto st = parse(m, body, "StartTransactionResp"); !st)
        return st.err();
      if (!m.has_success())
        return with_context("StartTransactionResp",
                            missing("StartTransactionResp", "success"));
      return response{start_transaction_resp{
        m.success(), m.transaction_descriptor(),
        m.has_errorcode() ? m.errorcode() : 0}};
    }
    case msg_code::read_objects_resp: {
      pb::ApbReadObjectsResp m;
      if (auto st = parse(m, body, "ReadObjectsResp"); !st)
        return st.err();
      auto r = decode_read_objects_resp(m, "ReadObjectsResp");
      if (!r)
        return r.err();
      return response{std::move(*r)};
    }
    case msg_code::commit_resp: {
      pb::ApbCommitResp m;
      if (auto st = parse(m, body, "CommitResp"); !st)
        return st.err();
      auto r = decode_commit_resp(m, "CommitResp");
      if (!r)
        return r.err();
      return response{std::move(*r)};
    }
    case msg_code::static_read_objects_resp: {
      pb::ApbStaticReadObjectsResp m;
      if (auto st = parse(m, body, "StaticReadObjectsResp"); !st)
        return st.err();
      if (!m.has_objects())
        return with_context("StaticReadObjectsResp",
                            missing("StaticReadObjectsResp", "objects"));
      if (!m.has_committime())
        return with_context("StaticReadObjectsResp",
                            missing("StaticReadObjectsResp", "committime"));
      auto objects = decode_read_objects_resp(m.objects(),
                                              "StaticReadObjectsResp");
      if (!objects)
        return objects.err();
      auto commit = decode_commit_resp(m.committime(), "StaticReadObjectsResp");
      if (!commit)
        return commit.err();
      return response{static_read_objects_resp{std::move(*objects),
                                               std::move(*commit)}};
    }
    case msg_code::tally_admin_resp: {
      pb::ApbTallyAdminResp m;
      if (auto st = parse(m, body, "TallyAdminResp"); !st)
        return st.err();
      if (!m.has_success())
        return with_context("TallyAdminResp",
                            missing("TallyAdminResp", "success"));
      return response{admin_resp{m.success(), m.text(),
                                 m.has_errorcode() ? m.errorcode() : 0}};
    }
    default: break;
  }
  return make_error(errc::unavailable,
                    "message code " + std::to_string(code) + " ("
                      + std::string{to_string(*known)}
                      + ") is not a response a Tally client reads");
}

} // namespace tally
