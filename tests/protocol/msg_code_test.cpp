#include <boost/test/unit_test.hpp>

#include "protocol/msg_code.hpp"

using namespace tally;

BOOST_AUTO_TEST_SUITE(protocol_msg_code)

BOOST_AUTO_TEST_CASE(codes_are_antidotes_numbers) {
  // ANTIDOTE-PROTOCOL.md, "Codes".
  BOOST_TEST(static_cast<int>(msg_code::error_resp) == 0);
  BOOST_TEST(static_cast<int>(msg_code::reg_update) == 107);
  BOOST_TEST(static_cast<int>(msg_code::counter_update) == 109);
  BOOST_TEST(static_cast<int>(msg_code::operation_resp) == 111);
  BOOST_TEST(static_cast<int>(msg_code::txn_properties) == 114);
  BOOST_TEST(static_cast<int>(msg_code::read_objects) == 116);
  BOOST_TEST(static_cast<int>(msg_code::update_objects) == 118);
  BOOST_TEST(static_cast<int>(msg_code::start_transaction) == 119);
  BOOST_TEST(static_cast<int>(msg_code::abort_transaction) == 120);
  BOOST_TEST(static_cast<int>(msg_code::commit_transaction) == 121);
  BOOST_TEST(static_cast<int>(msg_code::static_update_objects) == 122);
  BOOST_TEST(static_cast<int>(msg_code::static_read_objects) == 123);
  BOOST_TEST(static_cast<int>(msg_code::start_transaction_resp) == 124);
  BOOST_TEST(static_cast<int>(msg_code::read_object_resp) == 125);
  BOOST_TEST(static_cast<int>(msg_code::read_objects_resp) == 126);
  BOOST_TEST(static_cast<int>(msg_code::commit_resp) == 127);
  BOOST_TEST(static_cast<int>(msg_code::static_read_objects_resp) == 128);
}

BOOST_AUTO_TEST_CASE(tally_admin_codes_are_outside_antidotes_range) {
  // AntidoteDB uses 0 and 107-136; Tally's admin pair is 240/241.
  BOOST_TEST(static_cast<int>(msg_code::tally_admin_req) == 240);
  BOOST_TEST(static_cast<int>(msg_code::tally_admin_resp) == 241);
  BOOST_TEST(to_string(msg_code::tally_admin_req) == "TallyAdminReq");
  BOOST_TEST(to_string(msg_code::tally_admin_resp) == "TallyAdminResp");
  BOOST_TEST((msg_code_from_wire(240) == msg_code::tally_admin_req));
  BOOST_TEST((msg_code_from_wire(241) == msg_code::tally_admin_resp));
  BOOST_TEST(!msg_code_from_wire(239).has_value());
  BOOST_TEST(!msg_code_from_wire(242).has_value());
}

BOOST_AUTO_TEST_CASE(every_wire_byte_maps_to_a_named_code_or_none) {
  int known = 0;
  for (int b = 0; b < 256; ++b) {
    auto code = msg_code_from_wire(static_cast<std::uint8_t>(b));
    if (!code)
      continue;
    ++known;
    BOOST_TEST(static_cast<int>(*code) == b);
    BOOST_TEST(to_string(*code) != "unknown");
  }
  BOOST_TEST(known == 25); // 0, 107..128, 240, 241
  BOOST_TEST(!msg_code_from_wire(1).has_value());
  BOOST_TEST(!msg_code_from_wire(129).has_value());
  BOOST_TEST(!msg_code_from_wire(135).has_value());
}

BOOST_AUTO_TEST_CASE(served_requests_reply_with_antidotes_codes) {
  using m = msg_code;
  BOOST_TEST((reply_code_for(m::start_transaction) == m::start_transaction_resp));
  BOOST_TEST((reply_code_for(m::read_objects) == m::read_objects_resp));
  BOOST_TEST((reply_code_for(m::update_objects) == m::operation_resp));
  BOOST_TEST((reply_code_for(m::abort_transaction) == m::operation_resp));
  BOOST_TEST((reply_code_for(m::commit_transaction) == m::commit_resp));
  BOOST_TEST((reply_code_for(m::static_update_objects) == m::commit_resp));
  BOOST_TEST((reply_code_for(m::static_read_objects)
              == m::static_read_objects_resp));
  BOOST_TEST((reply_code_for(m::tally_admin_req) == m::tally_admin_resp));
  BOOST_TEST(!reply_code_for(m::tally_admin_resp).has_value());
  int served = 0;
  for (int b = 0; b < 256; ++b)
    if (auto c = msg_code_from_wire(static_cast<std::uint8_t>(b)))
      served += is_served_request(*c) ? 1 : 0;
  BOOST_TEST(served == 8);
  BOOST_TEST(is_served_request(m::tally_admin_req));
  BOOST_TEST(!is_served_request(m::tally_admin_resp));
  BOOST_TEST(!is_served_request(m::counter_update));
  BOOST_TEST(!is_served_request(m::commit_resp));
}

BOOST_AUTO_TEST_SUITE_END()
