// Bytes real AntidoteDB clients send and read.
//
// The request frames below were captured from antidote_ts_client 0.2.2 (the
// npm package, whose protobufjs encoder uses its own copy of AntidoteDB's
// .proto) talking to a recording fake server:
//   conn.update(conn.counter("c1").increment(5))                      -> 122
//   conn.update([counter("c2").increment(-3), fatCounter("f").increment(1)])
//   conn.counter("c1").read()                                          -> 123
//   tx = conn.startTransaction()  (monotonic snapshots, last commit "ct-2")
//   tx.update(tx.counter("c1").increment(2^40)); tx.counter("c1").read();
//   tx.commit(); tx2 = start; tx2.abort(); conn.update(conn.set("s").add("x"))
// The fake server answered descriptors "txd-1" and commit times "ct-1"/"ct-2"
// built with the client's own protobufjs classes.
//
// The other cases build bytes with the generated classes, as a C++ client
// compiled against AntidoteDB's .proto would, and read Tally's responses the
// way a client unaware of Tally's extensions does.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <string>

#include "protocol/antidote.pb.h"
#include "protocol/descriptor.hpp"
#include "protocol/messages.hpp"

using namespace tally;
namespace pb = tally::antidote_pb;

namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string{hex.substr(i, 2)},
                                               nullptr, 16)));
  return out;
}

request decode(int code, std::string_view hex) {
  auto r = decode_request(static_cast<std::uint8_t>(code), unhex(hex));
  BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.err().to_string()));
  return *r;
}

bound_object ts_obj(std::string key, crdt_type type = crdt_type::counter) {
  return bound_object{object_key{"default-bucket", std::move(key)}, type};
}

update_op ts_inc(std::string key, std::int64_t delta,
                 crdt_type type = crdt_type::counter) {
  return update_op{ts_obj(std::move(key), type),
                   counter_op{counter_update{delta}, std::nullopt}};
}

template <class Msg>
Msg parse_as_antidote_client(const frame& f) {
  Msg m;
  // ParseFromString also checks required fields, as strict clients do.
  BOOST_REQUIRE(m.ParseFromString(f.body));
  return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(protocol_real_client)

BOOST_AUTO_TEST_CASE(ts_client_static_update_decodes) {
  auto r = decode(122, "0a021200121e0a160a02633110031a0e64656661756c742d6275636b"
                       "657412040a02080a");
  // An empty properties message rides along: accepted, ignored.
  BOOST_TEST((r == request{static_update_objects_req{{}, {ts_inc("c1", 5)}}}));
}

BOOST_AUTO_TEST_CASE(ts_client_batch_update_with_fat_counter_decodes) {
  auto r = decode(122, "0a021200121e0a160a02633210031a0e64656661756c742d6275636b"
                       "657412040a020805121d0a150a0166100c1a0e64656661756c742d62"
                       "75636b657412040a020802");
  BOOST_TEST((r == request{static_update_objects_req{
                {}, {ts_inc("c2", -3), ts_inc("f", 1, crdt_type::fatcounter)}}}));
}

BOOST_AUTO_TEST_CASE(ts_client_static_read_decodes) {
  auto r = decode(123, "0a02120012160a02633110031a0e64656661756c742d6275636b6574");
  BOOST_TEST((r == request{static_read_objects_req{{}, {ts_obj("c1")}}}));
}

BOOST_AUTO_TEST_CASE(ts_client_interactive_transaction_decodes) {
  auto start = decode(119, "0a0463742d321200");
  BOOST_TEST((start == request{start_transaction_req{std::string{"ct-2"}}}));

  auto update = decode(118, "0a230a160a02633110031a0e64656661756c742d6275636b6574"
                            "12090a070880808080804012057478642d31");
  BOOST_TEST((update == request{update_objects_req{
                {ts_inc("c1", std::int64_t{1} << 40)}, "txd-1"}}));

  auto read = decode(116, "0a160a02633110031a0e64656661756c742d6275636b657412057478"
                          "642d31");
  BOOST_TEST((read == request{read_objects_req{{ts_obj("c1")}, "txd-1"}}));

  BOOST_TEST((decode(121, "0a057478642d31")
              == request{commit_transaction_req{"txd-1"}}));
  BOOST_TEST((decode(120, "0a057478642d31")
              == request{abort_transaction_req{"txd-1"}}));
}

BOOST_AUTO_TEST_CASE(ts_client_set_update_decodes_as_a_set_add) {
  auto r = decode(122, "0a080a0463742d32120012210a150a017310041a0e64656661756c74"
                       "2d6275636b65741208120608011202a178");
  const auto& req = std::get<static_update_objects_req>(r);
  BOOST_TEST(*req.transaction.timestamp == "ct-2");
  BOOST_REQUIRE_EQUAL(req.updates.size(), 1u);
  BOOST_TEST((req.updates[0].object == ts_obj("s", crdt_type::orset)));
  // The client's set.add("x"): one msgpack-encoded element, a1 78.
  const auto& add = std::get<set_add>(
    std::get<set_update>(std::get<crdt_op>(req.updates[0].op).update));
  BOOST_TEST((add.elements == std::vector<std::string>{"\xa1x"}));
  BOOST_TEST(check_supported(req.updates[0]).has_value());
}

BOOST_AUTO_TEST_CASE(ts_client_sends_tallys_own_bytes_back) {
  // Second capture: the fake server replayed Tally's encode_response bytes
  // (descriptor for tx <1,2> owned by "tally@n1", commit time {1:11}, a
  // counter at 2^40). The client read the clamped value 2147483647 and sent
  // the commit time and the descriptor back unchanged:
  auto start = decode(119, "0a1654010100000001000000010000000b000000000000001200");
  auto clock = decode_clock(*std::get<start_transaction_req>(start).timestamp);
  BOOST_REQUIRE(clock.has_value());
  BOOST_TEST((*clock == vector_clock{{1, 11}}));

  auto commit = decode(121, "0a3f580101000000000000000200000000000000030000000000"
                            "00000800000074616c6c79406e311500000001010000000100"
                            "0000010000000a00000000000000");
  auto d = decode_tx_descriptor(
    std::get<commit_transaction_req>(commit).transaction_descriptor);
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST((*d == tx_descriptor{tx_id{1, 2}, "tally@n1", 3, vector_clock{{1, 10}}}));
}

BOOST_AUTO_TEST_CASE(erlang_client_ignore_clock_means_no_snapshot) {
  // antidotec_pb sends term_to_binary(ignore) when it has no clock.
  for (std::string ts : {std::string("\x83\x64\x00\x06ignore", 10),
                         std::string("\x83\x77\x06ignore", 9)}) {
    pb::ApbStaticUpdateObjects m;
    m.mutable_transaction()->set_timestamp(ts);
    m.mutable_transaction()->mutable_properties();
    auto* u = m.add_updates();
    u->mutable_boundobject()->set_key("k");
    u->mutable_boundobject()->set_bucket("b");
    u->mutable_boundobject()->set_type(pb::COUNTER);
    u->mutable_operation()->mutable_counterop()->set_inc(3);
    std::string body;
    BOOST_REQUIRE(m.SerializeToString(&body));
    auto r = decode_request(122, body);
    BOOST_REQUIRE(r.has_value());
    const auto& req = std::get<static_update_objects_req>(*r);
    BOOST_TEST(!req.transaction.timestamp.has_value());
    BOOST_TEST(std::get<counter_op>(req.updates.at(0).op).update.delta == 3);
  }
}

BOOST_AUTO_TEST_CASE(java_client_passes_previous_commit_time_back) {
  // The Java client hands the last CommitResp.commit_time to
  // startTransaction: Tally must read its own bytes back.
  auto commit = encode_response(commit_resp{true, encode_clock(vector_clock{{1, 42}}), 0});
  auto as_client = parse_as_antidote_client<pb::ApbCommitResp>(commit);
  pb::ApbStartTransaction start;
  start.set_timestamp(as_client.commit_time());
  std::string body;
  BOOST_REQUIRE(start.SerializeToString(&body));
  auto r = decode_request(119, body);
  BOOST_REQUIRE(r.has_value());
  auto clock = decode_clock(*std::get<start_transaction_req>(*r).timestamp);
  BOOST_REQUIRE(clock.has_value());
  BOOST_TEST((*clock == vector_clock{{1, 42}}));
}

BOOST_AUTO_TEST_CASE(plain_client_reads_tally_responses) {
  auto tx = encode_tx_descriptor(tx_descriptor{tx_id{1, 2}, "n", 3, {}});
  auto start = parse_as_antidote_client<pb::ApbStartTransactionResp>(
    encode_response(start_transaction_resp{true, tx, 0}));
  BOOST_TEST(start.success());
  BOOST_TEST(start.transaction_descriptor() == tx);

  auto read = parse_as_antidote_client<pb::ApbStaticReadObjectsResp>(
    encode_response(static_read_objects_resp{
      read_objects_resp{true, {crdt_value{std::int64_t{-5}},
                               crdt_value{std::int64_t{3} << 33}}, 0},
      commit_resp{true, encode_clock({}), 0}}));
  BOOST_TEST(read.objects().objects(0).counter().value() == -5);
  // The 32-bit field saturates; the extension carries the exact value.
  BOOST_TEST(read.objects().objects(1).counter().value()
             == std::numeric_limits<std::int32_t>::max());
  BOOST_TEST(read.committime().success());

  auto op = parse_as_antidote_client<pb::ApbOperationResp>(
    encode_response(operation_resp{}));
  BOOST_TEST(op.success());
  auto err = parse_as_antidote_client<pb::ApbErrorResp>(
    encode_response(error_resp{make_error(errc::aborted, "aborted")}));
  BOOST_TEST(err.errcode() == 3u);
}

BOOST_AUTO_TEST_CASE(extension_fields_are_unknown_to_antidotes_proto) {
  // Tally's fields are numbered 100 and up, far from AntidoteDB's 1..7.
  BOOST_TEST(pb::ApbCounterUpdate::kTallyOpIdFieldNumber == 100);
  BOOST_TEST(pb::ApbGetCounterResp::kTallyValueFieldNumber == 100);
  BOOST_TEST(pb::ApbErrorResp::kTallyErrcFieldNumber == 100);
  BOOST_TEST(pb::ApbCounterUpdate::kIncFieldNumber == 1);
  BOOST_TEST(pb::ApbGetCounterResp::kValueFieldNumber == 1);
}

BOOST_AUTO_TEST_SUITE_END()
