#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>

#include "protocol/antidote.pb.h"
#include "protocol/descriptor.hpp"
#include "protocol/messages.hpp"

using namespace tally;
namespace pb = tally::antidote_pb;

namespace {

template <class Msg>
std::string body_of(const Msg& m) {
  std::string out;
  m.SerializePartialToString(&out);
  return out;
}

bound_object obj(std::string bucket, std::string key,
                 crdt_type type = crdt_type::counter) {
  return bound_object{object_key{std::move(bucket), std::move(key)}, type};
}

update_op inc(std::string key, std::int64_t delta,
              std::optional<op_id> id = std::nullopt,
              crdt_type type = crdt_type::counter) {
  return update_op{obj("b", std::move(key), type),
                   counter_op{counter_update{delta}, id}};
}

request round_trip(const request& req) {
  auto f = encode_request(req);
  BOOST_TEST(f.code == static_cast<std::uint8_t>(code_of(req)));
  auto back = decode_request(f.code, f.body);
  BOOST_REQUIRE_MESSAGE(back.has_value(), (back ? std::string{} : back.err().to_string()));
  return *back;
}

response round_trip(const response& resp) {
  auto f = encode_response(resp);
  BOOST_TEST(f.code == static_cast<std::uint8_t>(code_of(resp)));
  auto back = decode_response(f.code, f.body);
  BOOST_REQUIRE_MESSAGE(back.has_value(), (back ? std::string{} : back.err().to_string()));
  return *back;
}

error decode_error(msg_code code, const std::string& body) {
  auto r = decode_request(static_cast<std::uint8_t>(code), body);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(!r.err().message().empty());
  return r.err();
}

pb::ApbStaticUpdateObjects one_update(pb::CRDT_type type) {
  pb::ApbStaticUpdateObjects m;
  m.mutable_transaction();
  auto* u = m.add_updates();
  u->mutable_boundobject()->set_key("k");
  u->mutable_boundobject()->set_bucket("b");
  u->mutable_boundobject()->set_type(type);
  return m;
}

const std::string descriptor = encode_tx_descriptor(
  tx_descriptor{tx_id{9, 1}, "tally@n1", 77, vector_clock{{1, 10}}});

} // namespace

BOOST_AUTO_TEST_SUITE(protocol_messages)

// ---- round trips ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(every_request_round_trips) {
  auto clock = encode_clock(vector_clock{{1, 99}});
  std::vector<request> requests{
    read_objects_req{{obj("b", "k1"), obj("", ""),
                      obj(std::string("\0\xff", 2), "k", crdt_type::fatcounter)},
                     descriptor},
    read_objects_req{{}, descriptor},
    update_objects_req{{inc("a", 1), inc("b", -5, op_id{1, 2}),
                        inc("c", std::numeric_limits<std::int64_t>::min(),
                            op_id{~0ULL, ~0ULL}, crdt_type::fatcounter)},
                       descriptor},
    start_transaction_req{},
    start_transaction_req{clock},
    abort_transaction_req{descriptor},
    commit_transaction_req{descriptor},
    static_update_objects_req{start_transaction_req{clock},
                              {inc("x", 7, op_id{3, 4}),
                               inc("y", std::numeric_limits<std::int64_t>::max())}},
    static_update_objects_req{{}, {}},
    static_read_objects_req{{}, {obj("b", "x"), obj("b", "y")}},
    static_read_objects_req{start_transaction_req{clock}, {obj("b", "x")}},
    admin_req{"status", {}},
    admin_req{"leave", {"tally@127.0.0.1:9087"}},
    admin_req{std::string(max_admin_command_size, 'c'),
              std::vector<std::string>(max_admin_args,
                                       std::string(max_admin_arg_size, 'a'))},
    admin_req{"x", {"", "caf\xc3\xa9", "\xf0\x9f\x98\x80"}},
  };
  for (const auto& req : requests)
    BOOST_TEST((round_trip(req) == req));
}

BOOST_AUTO_TEST_CASE(unsupported_operations_round_trip_as_marked) {
  // Every AntidoteDB type is served: only a fat counter's reset is left.
  update_objects_req req{{}, descriptor};
  req.updates.push_back(update_op{obj("b", "f", crdt_type::fatcounter),
                                  unsupported_op{op_kind::reset}});
  BOOST_TEST((round_trip(request{req}) == request{req}));
}

BOOST_AUTO_TEST_CASE(every_response_round_trips) {
  auto clock = encode_clock(vector_clock{{1, 5}, {2, 6}});
  std::vector<response> responses{
    error_resp{make_error(errc::wrong_type, "b/k is a fatcounter")},
    error_resp{make_error(errc::aborted, "aborted by client")},
    error_resp{make_error(errc::timeout, "")},
    operation_resp{},
    operation_resp::failure(errc::aborted),
    start_transaction_resp{true, descriptor, 0},
    start_transaction_resp::failure(errc::timeout),
    read_objects_resp{true, {crdt_value{std::int64_t{0}}, crdt_value{std::int64_t{-1}},
                             crdt_value{std::numeric_limits<std::int64_t>::max()},
                             crdt_value{std::numeric_limits<std::int64_t>::min()},
                             crdt_value{std::int64_t{1} << 40}}, 0},
    read_objects_resp{true, {}, 0},
    read_objects_resp::failure(errc::unavailable),
    commit_resp{true, clock, 0},
    commit_resp::failure(errc::aborted),
    static_read_objects_resp{read_objects_resp{true, {crdt_value{std::int64_t{3}}}, 0},
                             commit_resp{true, clock, 0}},
    admin_resp{true, "member  partitions\ntally@127.0.0.1:9087  64\n", 0},
    admin_resp{true, "", 0},
    admin_resp::failure(errc::not_found, "no member tally@x:1"),
    admin_resp::failure(errc::unavailable, ""),
  };
  for (const auto& resp : responses)
    BOOST_TEST((round_trip(resp) == resp));
}

// ---- request validation -----------------------------------------------------------

BOOST_AUTO_TEST_CASE(absent_inc_means_plus_one) {
  auto m = one_update(pb::COUNTER);
  m.mutable_updates(0)->mutable_operation()->mutable_counterop();
  auto r = decode_request(122, body_of(m));
  BOOST_REQUIRE(r.has_value());
  const auto& upd = std::get<static_update_objects_req>(*r).updates.at(0);
  const auto& op = std::get<counter_op>(upd.op);
  BOOST_TEST(op.update.delta == 1);
  BOOST_TEST(!op.id.has_value());
}

BOOST_AUTO_TEST_CASE(missing_required_fields_are_corrupt_and_named) {
  pb::ApbReadObjects no_descriptor;
  auto e = decode_error(msg_code::read_objects, body_of(no_descriptor));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("transaction_descriptor") != std::string::npos);

  pb::ApbStaticReadObjects no_tx;
  no_tx.add_objects()->set_key("k");
  e = decode_error(msg_code::static_read_objects, body_of(no_tx));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("'transaction'") != std::string::npos);

  pb::ApbStaticReadObjects no_bucket;
  no_bucket.mutable_transaction();
  no_bucket.add_objects()->set_key("k");
  no_bucket.mutable_objects(0)->set_type(pb::COUNTER);
  e = decode_error(msg_code::static_read_objects, body_of(no_bucket));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("object 0") != std::string::npos);
  BOOST_TEST(e.message().find("'bucket'") != std::string::npos);

  auto no_op = one_update(pb::COUNTER);
  e = decode_error(msg_code::static_update_objects, body_of(no_op));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("'operation'") != std::string::npos);

  pb::ApbCommitTransaction empty_commit;
  e = decode_error(msg_code::commit_transaction, body_of(empty_commit));
  BOOST_TEST(e.code() == errc::corrupt);
  pb::ApbAbortTransaction empty_abort;
  e = decode_error(msg_code::abort_transaction, body_of(empty_abort));
  BOOST_TEST(e.code() == errc::corrupt);
}

BOOST_AUTO_TEST_CASE(unknown_crdt_type_number_is_named) {
  // Type 99 is no AntidoteDB type: proto2 keeps it as an unknown field.
  std::string bound = std::string("\x0a\x01k\x10\x63\x1a\x01" "b", 8);
  pb::ApbStaticReadObjects m;
  m.mutable_transaction();
  std::string body = body_of(m);
  body += '\x12';
  body += static_cast<char>(bound.size());
  body += bound;
  auto e = decode_error(msg_code::static_read_objects, body);
  BOOST_TEST(e.code() == errc::invalid_argument);
  BOOST_TEST(e.message().find("unknown CRDT type 99") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_antidote_type_is_served_and_bcounter_ops_decode) {
  pb::ApbStaticReadObjects m;
  m.mutable_transaction();
  for (auto t : {pb::ORSET, pb::LWWREG, pb::MVREG, pb::GMAP, pb::RWSET,
                 pb::RRMAP, pb::FLAG_EW, pb::FLAG_DW, pb::BCOUNTER}) {
    auto* o = m.add_objects();
    o->set_key("k");
    o->set_bucket("b");
    o->set_type(t);
  }
  auto r = decode_request(123, body_of(m));
  BOOST_REQUIRE(r.has_value());
  for (const auto& o : std::get<static_read_objects_req>(*r).objects) {
    BOOST_TEST(o.supported());
    BOOST_TEST(check_supported(o).has_value());
  }
  BOOST_TEST(!(bound_object{object_key{"b", "k"}, crdt_type::gset}.supported()));

  // ApbCounterUpdate on a bcounter: a non-negative inc increments, a
  // negative one decrements by its magnitude (the node fills the replica).
  auto bc = [](std::optional<std::int64_t> inc) {
    auto m = one_update(pb::BCOUNTER);
    auto* op = m.mutable_updates(0)->mutable_operation()->mutable_counterop();
    if (inc)
      op->set_inc(*inc);
    auto u = decode_request(122, body_of(m));
    BOOST_REQUIRE(u.has_value());
    return std::get<b_counter_update>(
      std::get<crdt_op>(std::get<static_update_objects_req>(*u).updates.at(0).op).update);
  };
  BOOST_TEST(std::get<b_counter_increment>(bc(std::nullopt)).amount == 1u);
  BOOST_TEST(std::get<b_counter_increment>(bc(7)).amount == 7u);
  BOOST_TEST(std::get<b_counter_decrement>(bc(-3)).amount == 3u);
  BOOST_TEST(std::get<b_counter_decrement>(bc(INT64_MIN)).amount == (1ull << 63));
  update_objects_req req{{}, descriptor};
  req.updates.push_back(update_op{obj("b", "k", crdt_type::bcounter),
                                  crdt_op{b_counter_update{b_counter_decrement{5, 0}}}});
  req.updates.push_back(update_op{obj("b", "k", crdt_type::bcounter),
                                  crdt_op{b_counter_update{b_counter_increment{2, 0}}, op_id{9, 4}}});
  BOOST_TEST((round_trip(request{req}) == request{req}));
  // Not inside maps.
  auto nested = one_update(pb::RRMAP);
  auto* n = nested.mutable_updates(0)->mutable_operation()->mutable_mapop()->add_updates();
  n->mutable_key()->set_key("b");
  n->mutable_key()->set_type(pb::BCOUNTER);
  n->mutable_update()->mutable_counterop()->set_inc(1);
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(nested)).code()
             == errc::wrong_type);
}

// AntidoteDB's encodings (antidote_pb_codec) of every operation, decoded.
BOOST_AUTO_TEST_CASE(set_register_flag_map_and_reset_operations_decode) {
  auto decoded = [](const pb::ApbStaticUpdateObjects& m) {
    auto r = decode_request(122, body_of(m));
    BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.err().to_string()));
    auto u = std::get<static_update_objects_req>(*r).updates.at(0);
    BOOST_TEST(check_supported(u).has_value());
    return std::get<crdt_op>(u.op).update;
  };
  auto add = one_update(pb::ORSET);
  auto* setop = add.mutable_updates(0)->mutable_operation()->mutable_setop();
  setop->set_optype(pb::ApbSetUpdate::ADD);
  setop->add_adds("x");
  setop->add_adds("y");
  BOOST_TEST((std::get<set_add>(std::get<set_update>(decoded(add))).elements
              == std::vector<std::string>{"x", "y"}));
  auto rm = one_update(pb::RWSET);
  setop = rm.mutable_updates(0)->mutable_operation()->mutable_setop();
  setop->set_optype(pb::ApbSetUpdate::REMOVE);
  setop->add_rems("x");
  BOOST_TEST((std::get<set_remove>(std::get<set_update>(decoded(rm))).elements
              == std::vector<std::string>{"x"}));
  auto reg = one_update(pb::MVREG);
  reg.mutable_updates(0)->mutable_operation()->mutable_regop()->set_value("v");
  BOOST_TEST(std::get<register_assign>(std::get<register_update>(decoded(reg))).value == "v");
  auto flag = one_update(pb::FLAG_DW);
  flag.mutable_updates(0)->mutable_operation()->mutable_flagop()->set_value(false);
  BOOST_TEST((std::get<flag_update>(decoded(flag)) == flag_update::disable));
  for (auto t : {pb::ORSET, pb::RWSET, pb::LWWREG, pb::MVREG, pb::FLAG_EW, pb::RRMAP}) {
    auto reset = one_update(t);
    reset.mutable_updates(0)->mutable_operation()->mutable_resetop();
    decoded(reset);
  }
  auto map = one_update(pb::RRMAP);
  auto* mapop = map.mutable_updates(0)->mutable_operation()->mutable_mapop();
  auto* nested = mapop->add_updates();
  nested->mutable_key()->set_key("n");
  nested->mutable_key()->set_type(pb::COUNTER);
  nested->mutable_update()->mutable_counterop()->set_inc(3);
  auto* gone = mapop->add_removedkeys();
  gone->set_key("s");
  gone->set_type(pb::ORSET);
  auto m = std::get<map_update>(decoded(map));
  BOOST_REQUIRE_EQUAL(m.updates.size(), 1u);
  BOOST_TEST((m.updates[0].key == map_key{"n", crdt_type::counter}));
  BOOST_TEST(std::get<counter_update>(m.updates[0].update).delta == 3);
  BOOST_TEST((m.removes == std::vector<map_key>{map_key{"s", crdt_type::orset}}));

  // An operation of another type, also nested, is wrong_type.
  auto reg_on_set = one_update(pb::ORSET);
  reg_on_set.mutable_updates(0)->mutable_operation()->mutable_regop()->set_value("v");
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(reg_on_set)).code()
             == errc::wrong_type);
  auto reset_gmap = one_update(pb::GMAP);
  reset_gmap.mutable_updates(0)->mutable_operation()->mutable_resetop();
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(reset_gmap)).code()
             == errc::wrong_type);
  auto bad_nested = one_update(pb::GMAP);
  nested = bad_nested.mutable_updates(0)->mutable_operation()->mutable_mapop()->add_updates();
  nested->mutable_key()->set_key("n");
  nested->mutable_key()->set_type(pb::FLAG_EW);
  nested->mutable_update()->mutable_regop()->set_value("v");
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(bad_nested)).code()
             == errc::wrong_type);
}

BOOST_AUTO_TEST_CASE(operations_of_every_type_round_trip) {
  update_objects_req req{{}, descriptor};
  auto op = [](crdt_type t, crdt_update u) {
    return update_op{obj("b", "k", t), crdt_op{std::move(u)}};
  };
  req.updates.push_back(op(crdt_type::orset, set_update{set_add{{"a", "b"}}}));
  req.updates.push_back(op(crdt_type::rwset, set_update{set_remove{{"a"}}}));
  req.updates.push_back(op(crdt_type::orset, set_update{set_reset{}}));
  req.updates.push_back(op(crdt_type::lwwreg, register_update{register_assign{"v", std::nullopt}}));
  req.updates.push_back(op(crdt_type::mvreg, register_update{register_reset{}}));
  req.updates.push_back(op(crdt_type::flag_ew, flag_update::enable));
  req.updates.push_back(op(crdt_type::flag_dw, flag_update::reset));
  map_update inner;
  inner.updates.push_back(keyed_update{map_key{"c", crdt_type::counter}, counter_update{-2}});
  map_update outer;
  outer.updates.push_back(keyed_update{map_key{"m", crdt_type::gmap}, inner});
  outer.updates.push_back(
    keyed_update{map_key{"f", crdt_type::flag_dw}, flag_update::disable});
  outer.removes.push_back(map_key{"r", crdt_type::lwwreg});
  req.updates.push_back(op(crdt_type::rrmap, outer));
  req.updates.push_back(op(crdt_type::rrmap, map_update{{}, {}, true}));
  BOOST_TEST((round_trip(request{req}) == request{req}));
}

BOOST_AUTO_TEST_CASE(values_of_every_type_round_trip_in_their_fields) {
  map_value inner;
  inner.entries.push_back({map_key{"c", crdt_type::counter}, crdt_value{std::int64_t{7}}});
  map_value m;
  m.entries.push_back({map_key{"f", crdt_type::flag_ew}, crdt_value{true}});
  m.entries.push_back({map_key{"g", crdt_type::gmap}, crdt_value{inner}});
  m.entries.push_back({map_key{"mv", crdt_type::mvreg},
                       crdt_value{std::vector<std::string>{"1", "2"}}});
  m.entries.push_back({map_key{"s", crdt_type::orset},
                       crdt_value{std::vector<std::string>{"x"}}});
  read_objects_resp resp{true,
                         {crdt_value{std::int64_t{5}}, crdt_value{false},
                          crdt_value{std::string{"reg"}},
                          crdt_value{std::vector<std::string>{"a", "b"}},
                          crdt_value{std::vector<std::string>{"v1", "v2"}}, crdt_value{m}},
                         0,
                         {crdt_type::counter, crdt_type::flag_dw, crdt_type::lwwreg,
                          crdt_type::rwset, crdt_type::mvreg, crdt_type::gmap}};
  auto f = encode_response(response{resp});
  pb::ApbReadObjectsResp wire;
  BOOST_REQUIRE(wire.ParseFromString(f.body));
  BOOST_TEST(wire.objects(1).has_flag());
  BOOST_TEST(wire.objects(2).reg().value() == "reg");
  BOOST_TEST(wire.objects(3).set().value_size() == 2);
  BOOST_TEST(wire.objects(4).mvreg().values_size() == 2); // not a set
  BOOST_TEST(wire.objects(5).map().entries(2).value().has_mvreg());
  auto back = std::get<read_objects_resp>(round_trip(response{resp}));
  BOOST_TEST((back == resp));
  BOOST_TEST((back.types
              == std::vector<crdt_type>{crdt_type::counter, crdt_type::flag_ew,
                                        crdt_type::lwwreg, crdt_type::orset,
                                        crdt_type::mvreg, crdt_type::rrmap}));
}

BOOST_AUTO_TEST_CASE(non_counter_operation_on_a_counter_is_wrong_type) {
  auto set_on_counter = one_update(pb::COUNTER);
  set_on_counter.mutable_updates(0)->mutable_operation()->mutable_setop()
    ->set_optype(pb::ApbSetUpdate::ADD);
  auto e = decode_error(msg_code::static_update_objects, body_of(set_on_counter));
  BOOST_TEST(e.code() == errc::wrong_type);
  BOOST_TEST(e.message().find("set operation") != std::string::npos);
  BOOST_TEST(e.message().find("b/k") != std::string::npos);

  auto reset_pn = one_update(pb::COUNTER);
  reset_pn.mutable_updates(0)->mutable_operation()->mutable_resetop();
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(reset_pn))
               .code() == errc::wrong_type);

  // A fat counter has a reset in AntidoteDB: decoded, marked unsupported.
  auto reset_fat = one_update(pb::FATCOUNTER);
  reset_fat.mutable_updates(0)->mutable_operation()->mutable_resetop();
  auto r = decode_request(122, body_of(reset_fat));
  BOOST_REQUIRE(r.has_value());
  const auto& upd = std::get<static_update_objects_req>(*r).updates.at(0);
  BOOST_TEST(upd.object.supported());
  auto st = check_supported(upd);
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().message().find("reset") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(update_operation_must_carry_exactly_one_operation) {
  auto none = one_update(pb::COUNTER);
  none.mutable_updates(0)->mutable_operation();
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(none)).code()
             == errc::invalid_argument);
  auto two = one_update(pb::COUNTER);
  two.mutable_updates(0)->mutable_operation()->mutable_counterop();
  two.mutable_updates(0)->mutable_operation()->mutable_flagop()->set_value(true);
  auto e = decode_error(msg_code::static_update_objects, body_of(two));
  BOOST_TEST(e.code() == errc::invalid_argument);
  BOOST_TEST(e.message().find("update 0") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(operation_id_needs_client_and_sequence) {
  auto m = one_update(pb::COUNTER);
  auto* id = m.mutable_updates(0)->mutable_operation()->mutable_counterop()
               ->mutable_tally_op_id();
  id->set_client(5);
  auto e = decode_error(msg_code::static_update_objects, body_of(m));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("'seq'") != std::string::npos);
  id->clear_client();
  id->set_seq(1);
  e = decode_error(msg_code::static_update_objects, body_of(m));
  BOOST_TEST(e.message().find("'client'") != std::string::npos);
  id->set_client(5);
  auto r = decode_request(122, body_of(m));
  BOOST_REQUIRE(r.has_value());
  const auto& op = std::get<counter_op>(
    std::get<static_update_objects_req>(*r).updates.at(0).op);
  BOOST_TEST((op.id == op_id{5, 1}));
}

BOOST_AUTO_TEST_CASE(a_map_update_carries_one_op_id_on_the_outermost_map_only) {
  // Decoded from ApbMapUpdate field 100 and encoded there again.
  auto m = one_update(pb::RRMAP);
  auto* mapop = m.mutable_updates(0)->mutable_operation()->mutable_mapop();
  auto* nested = mapop->add_updates();
  nested->mutable_key()->set_key("n");
  nested->mutable_key()->set_type(pb::COUNTER);
  nested->mutable_update()->mutable_counterop()->set_inc(3);
  mapop->mutable_tally_op_id()->set_client(7);
  mapop->mutable_tally_op_id()->set_seq(2);
  auto r = decode_request(122, body_of(m));
  BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.err().to_string()));
  const auto& op = std::get<crdt_op>(std::get<static_update_objects_req>(*r).updates.at(0).op);
  BOOST_TEST((op.id == op_id{7, 2}));
  update_objects_req req{{}, descriptor};
  req.updates.push_back(update_op{obj("b", "m", crdt_type::gmap), op});
  BOOST_TEST((round_trip(request{req}) == request{req}));
  // Half an op id is refused as for counters.
  mapop->mutable_tally_op_id()->clear_seq();
  BOOST_TEST(decode_error(msg_code::static_update_objects, body_of(m)).message().find("'seq'")
             != std::string::npos);
  mapop->clear_tally_op_id();
  // A counter inside a map carries none: refused, not silently dropped.
  nested->mutable_update()->mutable_counterop()->mutable_tally_op_id()->set_client(7);
  nested->mutable_update()->mutable_counterop()->mutable_tally_op_id()->set_seq(3);
  auto e = decode_error(msg_code::static_update_objects, body_of(m));
  BOOST_TEST(e.code() == errc::invalid_argument);
  BOOST_TEST(e.message().find("carries no op id") != std::string::npos);
  // Nor does a nested map.
  nested->mutable_update()->mutable_counterop()->clear_tally_op_id();
  auto* inner = mapop->add_updates();
  inner->mutable_key()->set_key("inner");
  inner->mutable_key()->set_type(pb::GMAP);
  auto* inner_map = inner->mutable_update()->mutable_mapop();
  inner_map->mutable_tally_op_id()->set_client(7);
  inner_map->mutable_tally_op_id()->set_seq(4);
  e = decode_error(msg_code::static_update_objects, body_of(m));
  BOOST_TEST(e.code() == errc::invalid_argument);
  BOOST_TEST(e.message().find("outermost") != std::string::npos);
  inner_map->clear_tally_op_id();
  BOOST_TEST(decode_request(122, body_of(m)).has_value());
}

BOOST_AUTO_TEST_CASE(no_snapshot_encodings_decode_as_absent_timestamp) {
  const std::string ignore25("\x83\x64\x00\x06ignore", 10);
  const std::string ignore26("\x83\x77\x06ignore", 9);
  for (const auto& ts : {std::string{}, ignore25, ignore26}) {
    pb::ApbStartTransaction m;
    m.set_timestamp(ts);
    auto r = decode_request(119, body_of(m));
    BOOST_REQUIRE(r.has_value());
    BOOST_TEST(!std::get<start_transaction_req>(*r).timestamp.has_value());

    pb::ApbStaticReadObjects s;
    s.mutable_transaction()->set_timestamp(ts);
    auto rs = decode_request(123, body_of(s));
    BOOST_REQUIRE(rs.has_value());
    BOOST_TEST(!std::get<static_read_objects_req>(*rs)
                  .transaction.timestamp.has_value());
  }
  auto absent = decode_request(119, "");
  BOOST_REQUIRE(absent.has_value());
  BOOST_TEST(!std::get<start_transaction_req>(*absent).timestamp.has_value());
}

BOOST_AUTO_TEST_CASE(transaction_properties_are_accepted_and_ignored) {
  pb::ApbStartTransaction m;
  m.mutable_properties()->set_read_write(1);
  m.mutable_properties()->set_red_blue(1);
  m.mutable_properties()->add_shared_locks("l1");
  m.mutable_properties()->add_exclusive_locks("l2");
  auto body = body_of(m);
  body += std::string("\x58\x01", 2); // a field from a future server: 11
  auto r = decode_request(119, body);
  BOOST_REQUIRE(r.has_value());
}

BOOST_AUTO_TEST_CASE(unknown_and_unserved_codes_are_unavailable) {
  for (int code : {1, 50, 106, 129, 135, 136, 255}) {
    auto r = decode_request(static_cast<std::uint8_t>(code), "");
    BOOST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::unavailable);
    BOOST_TEST(r.err().message().find("unknown message code")
               != std::string::npos);
  }
  for (int code : {0, 107, 109, 115, 117, 124, 126, 128, 241}) {
    auto r = decode_request(static_cast<std::uint8_t>(code), "");
    BOOST_REQUIRE(!r.has_value());
    BOOST_TEST(r.err().code() == errc::unavailable);
    BOOST_TEST(r.err().message().find("not a request") != std::string::npos);
  }
  BOOST_TEST(decode_response(119, "").err().code() == errc::unavailable);
  BOOST_TEST(decode_response(200, "").err().code() == errc::unavailable);
  BOOST_TEST(decode_response(240, "").err().code() == errc::unavailable);
}

BOOST_AUTO_TEST_CASE(admin_requests_out_of_bounds_are_invalid_and_named) {
  auto refused = [](const admin_req& req, const std::string& needle) {
    BOOST_TEST(!check_admin_req(req));
    auto f = encode_request(req);
    BOOST_TEST(f.code == 240);
    auto e = decode_error(msg_code::tally_admin_req, f.body);
    BOOST_TEST(e.code() == errc::invalid_argument);
    BOOST_TEST(e.message().find("TallyAdminReq") != std::string::npos);
    BOOST_TEST_INFO(e.message());
    BOOST_TEST(e.message().find(needle) != std::string::npos);
  };
  refused(admin_req{"", {}}, "empty");
  refused(admin_req{std::string(max_admin_command_size + 1, 'c'), {}},
          "command of 65 bytes");
  refused(admin_req{"leave", std::vector<std::string>(max_admin_args + 1, "a")},
          "17 arguments");
  refused(admin_req{"leave", {"ok", std::string(max_admin_arg_size + 1, 'a')}},
          "argument 1 of 1025 bytes");
  refused(admin_req{"st\xff", {}}, "command is not valid UTF-8");
  refused(admin_req{"leave", {"\xc0\x80"}}, "argument 0 is not valid UTF-8");
  refused(admin_req{"leave", {"\xed\xa0\x80"}}, "not valid UTF-8"); // surrogate
  refused(admin_req{"leave", {"\xe2\x82"}}, "not valid UTF-8");     // truncated
  BOOST_TEST(!!check_admin_req(admin_req{"status", {}}));

  // The required command missing is corrupt, as for every message.
  pb::ApbTallyAdminReq m;
  m.add_args("x");
  auto e = decode_error(msg_code::tally_admin_req, body_of(m));
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("'command'") != std::string::npos);
  // An admin response without success is corrupt.
  auto r = decode_response(241, "");
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.err().code() == errc::corrupt);
  BOOST_TEST(r.err().message().find("'success'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(admin_response_sends_its_error_code_only_on_failure) {
  pb::ApbTallyAdminResp m;
  auto f = encode_response(admin_resp{true, "ok", 7});
  BOOST_REQUIRE(m.ParseFromString(f.body));
  BOOST_TEST(!m.has_errorcode());
  BOOST_TEST(m.text() == "ok");
  f = encode_response(admin_resp::failure(errc::not_found, "who?"));
  BOOST_REQUIRE(m.ParseFromString(f.body));
  BOOST_TEST(!m.success());
  BOOST_TEST(m.errorcode() == static_cast<std::uint32_t>(errc::not_found));
  BOOST_TEST(m.text() == "who?");
}

BOOST_AUTO_TEST_CASE(garbage_body_is_corrupt) {
  auto e = decode_error(msg_code::static_update_objects, "\xff\xff\xff");
  BOOST_TEST(e.code() == errc::corrupt);
  BOOST_TEST(e.message().find("StaticUpdateObjects") != std::string::npos);
}

// ---- responses -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(counter_values_are_clamped_and_sent_exact_in_extension) {
  BOOST_TEST(clamp_counter_value(5) == 5);
  BOOST_TEST(clamp_counter_value(std::int64_t{1} << 40)
             == std::numeric_limits<std::int32_t>::max());
  BOOST_TEST(clamp_counter_value(-(std::int64_t{1} << 40))
             == std::numeric_limits<std::int32_t>::min());

  auto f = encode_response(read_objects_resp{
    true, {crdt_value{std::int64_t{1} << 40}, crdt_value{std::int64_t{-7}}}, 0});
  pb::ApbReadObjectsResp m;
  BOOST_REQUIRE(m.ParseFromString(f.body)); // all required fields present
  BOOST_TEST(m.objects(0).counter().value()
             == std::numeric_limits<std::int32_t>::max());
  BOOST_TEST(m.objects(0).counter().tally_value() == (std::int64_t{1} << 40));
  BOOST_TEST(m.objects(1).counter().value() == -7);
  BOOST_TEST(m.objects(1).counter().tally_value() == -7);
}

BOOST_AUTO_TEST_CASE(errors_map_onto_antidotes_codes) {
  BOOST_TEST((to_wire_error(errc::aborted) == wire_error::aborted));
  BOOST_TEST((to_wire_error(errc::timeout) == wire_error::timeout));
  for (auto c : {errc::invalid_argument, errc::overflow, errc::corrupt,
                 errc::wrong_type, errc::not_found, errc::io_error,
                 errc::storage_full, errc::unavailable, errc::bad_config})
    BOOST_TEST((to_wire_error(c) == wire_error::unknown));
  BOOST_TEST(errc_from_wire_error(1) == errc::timeout);
  BOOST_TEST(errc_from_wire_error(3) == errc::aborted);
  BOOST_TEST(errc_from_wire_error(0) == errc::unavailable);
  BOOST_TEST(errc_from_wire_error(2) == errc::no_permissions);
  BOOST_TEST((to_wire_error(errc::no_permissions) == wire_error::no_permissions));

  auto f = encode_response(error_resp{make_error(errc::overflow, "too big")});
  BOOST_TEST(f.code == 0);
  pb::ApbErrorResp m;
  BOOST_REQUIRE(m.ParseFromString(f.body));
  BOOST_TEST(m.errcode() == 0u);
  BOOST_TEST(m.errmsg() == "too big");
  BOOST_TEST(m.tally_errc() == static_cast<std::uint32_t>(errc::overflow));

  auto fail = encode_response(commit_resp::failure(errc::aborted));
  pb::ApbCommitResp c;
  BOOST_REQUIRE(c.ParseFromString(fail.body));
  BOOST_TEST(!c.success());
  BOOST_TEST(c.errorcode() == 3u);
  BOOST_TEST(!c.has_commit_time());
}

BOOST_AUTO_TEST_CASE(antidote_error_without_extension_maps_from_errcode) {
  pb::ApbErrorResp m;
  m.set_errmsg("{aborted,...}");
  m.set_errcode(3);
  auto r = decode_response(0, body_of(m));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(std::get<error_resp>(*r).err.code() == errc::aborted);
  BOOST_TEST(std::get<error_resp>(*r).err.message() == "{aborted,...}");
  m.set_tally_errc(200); // not an errc: ignored
  m.set_errcode(1);
  r = decode_response(0, body_of(m));
  BOOST_TEST(std::get<error_resp>(*r).err.code() == errc::timeout);
}

BOOST_AUTO_TEST_CASE(antidote_counter_value_without_extension_is_read) {
  pb::ApbStaticReadObjectsResp m;
  m.mutable_objects()->set_success(true);
  m.mutable_objects()->add_objects()->mutable_counter()->set_value(-12);
  m.mutable_committime()->set_success(true);
  m.mutable_committime()->set_commit_time(std::string("\x83\x74", 2));
  auto r = decode_response(128, body_of(m));
  BOOST_REQUIRE(r.has_value());
  const auto& s = std::get<static_read_objects_resp>(*r);
  BOOST_TEST((s.objects.values.at(0) == crdt_value{std::int64_t{-12}}));
  BOOST_TEST(s.commit.commit_time == std::string("\x83\x74", 2));
}

BOOST_AUTO_TEST_CASE(empty_read_values_are_refused) {
  pb::ApbReadObjectsResp m;
  m.set_success(true);
  m.add_objects()->mutable_reg()->set_value("v");
  auto r = decode_response(126, body_of(m));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST((std::get<read_objects_resp>(*r).values.at(0) == crdt_value{std::string{"v"}}));

  pb::ApbReadObjectsResp empty;
  empty.set_success(true);
  empty.add_objects();
  BOOST_TEST(decode_response(126, body_of(empty)).err().code() == errc::corrupt);

  pb::ApbStaticReadObjectsResp no_commit;
  no_commit.mutable_objects()->set_success(true);
  BOOST_TEST(decode_response(128, body_of(no_commit)).err().code()
             == errc::corrupt);
  BOOST_TEST(decode_response(111, "").err().code() == errc::corrupt);
}

BOOST_AUTO_TEST_SUITE_END()
