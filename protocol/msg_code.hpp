// AntidoteDB's message codes: the byte after a frame's length
// (ANTIDOTE-PROTOCOL.md, "Codes"; docs/PROTOCOL.md), plus Tally's own admin
// pair (240/241). The numbers are facts of the wire protocol: never renumber.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace tally {

enum class msg_code : std::uint8_t {
  error_resp = 0,
  reg_update = 107,
  get_reg_resp = 108,
  counter_update = 109,
  get_counter_resp = 110,
  operation_resp = 111,
  set_update = 112,
  get_set_resp = 113,
  txn_properties = 114,
  bound_object = 115,
  read_objects = 116,
  update_op = 117,
  update_objects = 118,
  start_transaction = 119,
  abort_transaction = 120,
  commit_transaction = 121,
  static_update_objects = 122,
  static_read_objects = 123,
  start_transaction_resp = 124,
  read_object_resp = 125,
  read_objects_resp = 126,
  commit_resp = 127,
  static_read_objects_resp = 128,
  // 129-134 (DC management) and 135/136 (ValidateOrRead) exist in AntidoteDB
  // but Tally neither serves nor sends them, so they are unknown codes here.

  // Tally extension: cluster administration (docs/PROTOCOL.md, "Admin
  // requests"). AntidoteDB uses 0 and 107-136 only; 240/241 sit far above
  // them, so a future AntidoteDB code cannot collide. An AntidoteDB server
  // closes the connection on 240, as on any unknown code.
  tally_admin_req = 240,
  tally_admin_resp = 241,
};

/// The code's AntidoteDB message name without the "Apb" prefix
/// ("StaticReadObjects"); "unknown" for a value outside the enum.
std::string_view to_string(msg_code code) noexcept;

inline std::ostream& operator<<(std::ostream& os, msg_code code) {
  return os << to_string(code) << '(' << static_cast<unsigned>(code) << ')';
}

/// The msg_code for a wire byte; nullopt for a byte that is none of the codes
/// above.
std::optional<msg_code> msg_code_from_wire(std::uint8_t wire) noexcept;

/// True for the eight requests a Tally server answers: 116, 118-123 and
/// Tally's admin request 240.
bool is_served_request(msg_code code) noexcept;

/// The code of the successful reply to a served request (119 -> 124,
/// 116 -> 126, 118 -> 111, 120 -> 111, 121 -> 127, 122 -> 127, 123 -> 128,
/// 240 -> 241);
/// nullopt for any other code. A failed request may instead be answered with
/// msg_code::error_resp.
std::optional<msg_code> reply_code_for(msg_code request) noexcept;

} // namespace tally
