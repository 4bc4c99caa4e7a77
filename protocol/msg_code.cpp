#include "protocol/msg_code.hpp"

namespace tally {

std::string_view to_string(msg_code code) noexcept {
  switch (code) {
    case msg_code::error_resp: return "ErrorResp";
    case msg_code::reg_update: return "RegUpdate";
    case msg_code::get_reg_resp: return "GetRegResp";
    case msg_code::counter_update: return "CounterUpdate";
    case msg_code::get_counter_resp: return "GetCounterResp";
    case msg_code::operation_resp: return "OperationResp";
    case msg_code::set_update: return "SetUpdate";
    case msg_code::get_set_resp: return "GetSetResp";
    case msg_code::txn_properties: return "TxnProperties";
    case msg_code::bound_object: return "BoundObject";
    case msg_code::read_objects: return "ReadObjects";
    case msg_code::update_op: return "UpdateOp";
    case msg_code::update_objects: return "UpdateObjects";
    case msg_code::start_transaction: return "StartTransaction";
    case msg_code::abort_transaction: return "AbortTransaction";
    case msg_code::commit_transaction: return "CommitTransaction";
    case msg_code::static_update_objects: return "StaticUpdateObjects";
    case msg_code::static_read_objects: return "StaticReadObjects";
    case msg_code::start_transaction_resp: return "StartTransactionResp";
    case msg_code::read_object_resp: return "ReadObjectResp";
    case msg_code::read_objects_resp: return "ReadObjectsResp";
    case msg_code::commit_resp: return "CommitResp";
    case msg_code::static_read_objects_resp: return "StaticReadObjectsResp";
    case msg_code::tally_admin_req: return "TallyAdminReq";
    case msg_code::tally_admin_resp: return "TallyAdminResp";
  }
  return "unknown";
}

std::optional<msg_code> msg_code_from_wire(std::uint8_t wire) noexcept {
  if (wire == 0 || (wire >= 107 && wire <= 128) || wire == 240 || wire == 241)
    return static_cast<msg_code>(wire);
  return std::nullopt;
}

bool is_served_request(msg_code code) noexcept {
  return reply_code_for(code).has_value();
}

std::optional<msg_code> reply_code_for(msg_code request) noexcept {
  switch (request) {
    case msg_code::read_objects: return msg_code::read_objects_resp;
    case msg_code::update_objects: return msg_code::operation_resp;
    case msg_code::start_transaction: return msg_code::start_transaction_resp;
    case msg_code::abort_transaction: return msg_code::operation_resp;
    case msg_code::commit_transaction: return msg_code::commit_resp;
    case msg_code::static_update_objects: return msg_code::commit_resp;
    case msg_code::static_read_objects:
      return msg_code::static_read_objects_resp;
    case msg_code::tally_admin_req: return msg_code::tally_admin_resp;
    default: return std::nullopt;
  }
}

} // namespace tally
