// Typed requests and responses of the AntidoteDB client protocol, and their
// protobuf codec (docs/PROTOCOL.md). Server and client use the same structs:
//
//   server: decode_request(code, body) -> request;  encode_response(response)
//   client: encode_request(request);  decode_response(code, body) -> response
//
// so a frame written by one side decodes on the other. No protobuf type
// appears here: the generated classes (protocol/antidote.pb.h) stay inside
// messages.cpp and the tests.
//
// Contract: plain functions over plain values, no I/O, callable from any
// thread. The decoders validate everything, never crash and never throw
// (except std::bad_alloc) on any input: bad bytes become an error value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/expected.hpp"
#include "crdt/crdt_object.hpp"
#include "crdt/crdt_type.hpp"
#include "crdt/op_id.hpp"
#include "common/ids.hpp" // object_key
#include "protocol/frame.hpp"
#include "protocol/msg_code.hpp"

namespace tally {

// ---- Objects and operations ----------------------------------------------

/// ApbBoundObject: an object and the CRDT type the client expects it to have.
/// Every AntidoteDB type decodes; supported() says whether Tally stores it.
struct bound_object {
  object_key key; // bucket and key, arbitrary bytes
  crdt_type type = crdt_type::counter;

  bool supported() const noexcept { return is_supported(type); }

  friend bool operator==(const bound_object& a, const bound_object& b) {
    return a.key == b.key && a.type == b.type;
  }
};

/// ApbCounterUpdate on a counter or fat counter.
struct counter_op {
  counter_update update;  // an absent `inc` on the wire decodes as +1
  std::optional<op_id> id; // Tally extension (ApbCounterUpdate field 100)

  friend bool operator==(const counter_op& a, const counter_op& b) {
    return a.update.delta == b.update.delta && a.id == b.id;
  }
};

/// Which field of ApbUpdateOperation carries the operation (the numbers are
/// the field numbers).
enum class op_kind : std::uint8_t {
  counter = 1,
  set = 2,
  reg = 3,
  map = 5,
  reset = 6,
  flag = 7,
};

/// "counter", "set", "register", "map", "reset", "flag".
std::string_view to_string(op_kind kind) noexcept;

/// An operation Tally does not implement, on a type it does not store (or a
/// reset of a fat counter). It is decoded, not refused, so the server can
/// answer with check_supported()'s clear error; its contents are dropped.
struct unsupported_op {
  op_kind kind = op_kind::set;

  friend bool operator==(unsupported_op a, unsupported_op b) {
    return a.kind == b.kind;
  }
};

/// A set, register, flag, map or reset operation (ApbSetUpdate, ApbRegUpdate,
/// ApbFlagUpdate, ApbMapUpdate, ApbCrdtReset) as the CRDT layer takes it:
/// docs/PROTOCOL.md, "Operations of every type".
struct crdt_op {
  crdt_update update;
  /// Tally extension for the operations whose effects add, so that a
  /// resend is recognised by op id: a bcounter's (ApbCounterUpdate field
  /// 100) and a map update's, for its nested counters (ApbMapUpdate field
  /// 100, outermost map only). Other operations carry none.
  std::optional<op_id> id = std::nullopt;

  friend bool operator==(const crdt_op& a, const crdt_op& b);
};

/// ApbUpdateOp: one operation on one object. A counter update on a counter
/// or fatcounter is a counter_op (it may carry an op id); any other
/// operation on a served type is a crdt_op; the rest (bcounter, a fat
/// counter's reset) is an unsupported_op.
struct update_op {
  bound_object object;
  std::variant<counter_op, unsupported_op, crdt_op> op;

  friend bool operator==(const update_op& a, const update_op& b) {
    return a.object == b.object && a.op == b.op;
  }
};

/// ok for an object Tally serves; errc::wrong_type naming the type (and the
/// operation) otherwise, e.g. "Tally stores counter and fatcounter objects
/// only; bucket/key is an orset".
status check_supported(const bound_object& object);
status check_supported(const update_op& update);

// ---- Requests (the eight codes a Tally server serves) ----------------------

/// 119 ApbStartTransaction. Transaction properties are accepted and ignored.
struct start_transaction_req {
  /// The client's last seen commit time, as a server issued it
  /// (decode_clock() reads Tally's). nullopt means "no snapshot":
  /// decode_request maps an absent field, empty bytes and Erlang
  /// term_to_binary(ignore) (is_no_snapshot) all to nullopt.
  std::optional<std::string> timestamp;

  friend bool operator==(const start_transaction_req& a,
                         const start_transaction_req& b) {
    return a.timestamp == b.timestamp;
  }
};

/// 116 ApbReadObjects.
struct read_objects_req {
  std::vector<bound_object> objects;
  std::string transaction_descriptor; // opaque; decode_tx_descriptor()

  friend bool operator==(const read_objects_req& a, const read_objects_req& b) {
    return a.objects == b.objects
           && a.transaction_descriptor == b.transaction_descriptor;
  }
};

/// 118 ApbUpdateObjects.
struct update_objects_req {
  std::vector<update_op> updates;
  std::string transaction_descriptor;

  friend bool operator==(const update_objects_req& a,
                         const update_objects_req& b) {
    return a.updates == b.updates
           && a.transaction_descriptor == b.transaction_descriptor;
  }
};

/// 120 ApbAbortTransaction.
struct abort_transaction_req {
  std::string transaction_descriptor;

  friend bool operator==(const abort_transaction_req& a,
                         const abort_transaction_req& b) {
    return a.transaction_descriptor == b.transaction_descriptor;
  }
};

/// 121 ApbCommitTransaction.
struct commit_transaction_req {
  std::string transaction_descriptor;

  friend bool operator==(const commit_transaction_req& a,
                         const commit_transaction_req& b) {
    return a.transaction_descriptor == b.transaction_descriptor;
  }
};

/// 122 ApbStaticUpdateObjects: start, update, commit in one request.
struct static_update_objects_req {
  start_transaction_req transaction;
  std::vector<update_op> updates;

  friend bool operator==(const static_update_objects_req& a,
                         const static_update_objects_req& b) {
    return a.transaction == b.transaction && a.updates == b.updates;
  }
};

/// 123 ApbStaticReadObjects: one snapshot read in one request.
struct static_read_objects_req {
  start_transaction_req transaction;
  std::vector<bound_object> objects;

  friend bool operator==(const static_read_objects_req& a,
                         const static_read_objects_req& b) {
    return a.transaction == b.transaction && a.objects == b.objects;
  }
};

/// Bounds of an admin request (decode_request refuses more with
/// errc::invalid_argument). Why these: admin commands are short verbs
/// ("status", "leave") with a few arguments such as a node id
/// ("tally@127.0.0.1:9087"); the bounds keep a request a few KiB.
inline constexpr std::size_t max_admin_command_size = 64;
inline constexpr std::size_t max_admin_args = 16;
inline constexpr std::size_t max_admin_arg_size = 1024;

/// 240 ApbTallyAdminReq (Tally extension, not AntidoteDB): one cluster
/// administration command and its arguments, e.g. {"leave", {node id}}.
/// Answered with an admin_resp (241) or an error_resp. Which commands exist
/// is the server's business; the codec only checks the bounds.
struct admin_req {
  std::string command;
  std::vector<std::string> args;

  friend bool operator==(const admin_req& a, const admin_req& b) {
    return a.command == b.command && a.args == b.args;
  }
};

/// ok for an admin request within the bounds above; errc::invalid_argument
/// otherwise: an empty command, a command over max_admin_command_size bytes,
/// more than max_admin_args arguments, an argument over max_admin_arg_size
/// bytes, or a command or argument that is not valid UTF-8 (they are proto
/// `string`s, which other languages' protobuf libraries require to be
/// UTF-8).
status check_admin_req(const admin_req& req);

using request =
  std::variant<read_objects_req, update_objects_req, start_transaction_req,
               abort_transaction_req, commit_transaction_req,
               static_update_objects_req, static_read_objects_req, admin_req>;

/// The message code `req` travels with.
msg_code code_of(const request& req) noexcept;

/// Decodes one request frame (server side). Errors, each with a message that
/// names the message, the element and the field:
/// - errc::unavailable: `code` is not one of the eight served requests
///   (unknown, a response code, a nested-only message). AntidoteDB closes
///   the connection on an unknown code; the server may do the same.
/// - errc::corrupt: the body is not protobuf, or lacks a required field, or
///   an operation id lacks its client or sequence number.
/// - errc::invalid_argument: a CRDT type number that is no AntidoteDB type,
///   an ApbUpdateOperation with no operation or with more than one, a body
///   larger than protobuf can parse (2 GiB), an admin request that fails
///   check_admin_req().
/// - errc::wrong_type: an operation other than a counter update on a
///   counter (a set operation, a reset of a PN counter, ...).
/// Objects of AntidoteDB types Tally does not store decode fine, with any
/// one operation as an unsupported_op: use check_supported().
expected<request> decode_request(std::uint8_t code, std::string_view body);

/// Encodes a request (client side). A nullopt timestamp is left out; an
/// unsupported_op is sent as a minimal operation of its kind.
frame encode_request(const request& req);

// ---- Responses ---------------------------------------------------------

/// AntidoteDB's error codes in ErrorResp.errcode and in every *Resp's
/// errorcode field.
enum class wire_error : std::uint32_t {
  unknown = 0,
  timeout = 1,
  no_permissions = 2,
  aborted = 3,
};

/// errc::aborted -> aborted, errc::timeout -> timeout, errc::no_permissions
/// (a bounded counter's rights) -> no_permissions, anything else -> unknown.
wire_error to_wire_error(errc code) noexcept;

/// The reverse, for clients: 1 -> timeout, 2 -> no_permissions, 3 ->
/// aborted, anything else (unknown, numbers from newer servers) ->
/// unavailable.
errc errc_from_wire_error(std::uint32_t code) noexcept;

/// 0 ApbErrorResp. Encoded as errmsg = err.message(), errcode =
/// to_wire_error(err.code()) and the extension tally_errc = err.code().
/// Decoded: the code from tally_errc when a known errc, else from errcode;
/// the message from errmsg.
struct error_resp {
  error err;

  friend bool operator==(const error_resp& a, const error_resp& b) {
    return a.err == b.err;
  }
};

/// 111 ApbOperationResp (answers UpdateObjects and AbortTransaction).
/// `error_code` (a wire_error) is sent only when !success.
struct operation_resp {
  bool success = true;
  std::uint32_t error_code = 0;

  static operation_resp failure(errc code) {
    return {false, static_cast<std::uint32_t>(to_wire_error(code))};
  }
  friend bool operator==(const operation_resp& a, const operation_resp& b) {
    return a.success == b.success && a.error_code == b.error_code;
  }
};

/// 124 ApbStartTransactionResp. The descriptor is sent only when success.
struct start_transaction_resp {
  bool success = true;
  std::string transaction_descriptor; // encode_tx_descriptor() bytes
  std::uint32_t error_code = 0;

  static start_transaction_resp failure(errc code) {
    return {false, {}, static_cast<std::uint32_t>(to_wire_error(code))};
  }
  friend bool operator==(const start_transaction_resp& a,
                         const start_transaction_resp& b) {
    return a.success == b.success
           && a.transaction_descriptor == b.transaction_descriptor
           && a.error_code == b.error_code;
  }
};

/// 126 ApbReadObjectsResp: one value per object asked for, in order. A
/// counter value is sent twice: in AntidoteDB's 32-bit field, clamped to
/// [INT32_MIN, INT32_MAX], and exact in the extension field 100. Every other
/// value travels in the field of its type: set, reg, mvreg, flag, map.
struct read_objects_resp {
  bool success = true;
  std::vector<crdt_value> values;
  std::uint32_t error_code = 0;
  /// The type of each value, which picks its field: needed only to tell a
  /// multi-value register from a set (both read as a list); a missing entry
  /// is inferred from the value (a list goes as a set). Decoded: the type
  /// the field names (counter, orset, lwwreg, mvreg, flag_ew, rrmap).
  /// Not compared by ==.
  std::vector<crdt_type> types = {};

  static read_objects_resp failure(errc code) {
    return {false, {}, static_cast<std::uint32_t>(to_wire_error(code))};
  }
  friend bool operator==(const read_objects_resp& a,
                         const read_objects_resp& b) {
    return a.success == b.success && a.values == b.values
           && a.error_code == b.error_code;
  }
};

/// The types of `objects`, in order: read_objects_resp::types of a read.
std::vector<crdt_type> types_of(const std::vector<bound_object>& objects);

/// 127 ApbCommitResp (answers CommitTransaction and StaticUpdateObjects).
/// The commit time is sent only when success.
struct commit_resp {
  bool success = true;
  std::string commit_time; // encode_clock() bytes
  std::uint32_t error_code = 0;

  static commit_resp failure(errc code) {
    return {false, {}, static_cast<std::uint32_t>(to_wire_error(code))};
  }
  friend bool operator==(const commit_resp& a, const commit_resp& b) {
    return a.success == b.success && a.commit_time == b.commit_time
           && a.error_code == b.error_code;
  }
};

/// 128 ApbStaticReadObjectsResp: the values and the snapshot's commit time.
struct static_read_objects_resp {
  read_objects_resp objects;
  commit_resp commit;

  friend bool operator==(const static_read_objects_resp& a,
                         const static_read_objects_resp& b) {
    return a.objects == b.objects && a.commit == b.commit;
  }
};

/// 241 ApbTallyAdminResp (Tally extension): the answer to an admin_req.
/// `text` is for a human: the member table and partition ownership of
/// "status", a confirmation, or on failure the reason. `error_code` is sent
/// only when !success and is a tally::errc number (not a wire_error: no
/// AntidoteDB peer ever reads this message).
struct admin_resp {
  bool success = true;
  std::string text;
  std::uint32_t error_code = 0;

  static admin_resp failure(errc code, std::string text) {
    return {false, std::move(text), static_cast<std::uint32_t>(code)};
  }
  friend bool operator==(const admin_resp& a, const admin_resp& b) {
    return a.success == b.success && a.text == b.text
           && a.error_code == b.error_code;
  }
};

using response =
  std::variant<error_resp, operation_resp, start_transaction_resp,
               read_objects_resp, commit_resp, static_read_objects_resp,
               admin_resp>;

/// The message code `resp` travels with.
msg_code code_of(const response& resp) noexcept;

/// Encodes a response (server side).
frame encode_response(const response& resp);

/// Decodes one response frame (client side). Errors: errc::unavailable for a
/// code that is not one of the seven responses; errc::corrupt for bytes that
/// are not protobuf or lack a required field (including an
/// ApbReadObjectResp with no value, or a map nested deeper than
/// byte_reader::max_depth).
expected<response> decode_response(std::uint8_t code, std::string_view body);

/// The 32-bit value AntidoteDB's GetCounterResp.value carries for `value`:
/// `value` clamped to [INT32_MIN, INT32_MAX].
std::int32_t clamp_counter_value(std::int64_t value) noexcept;

} // namespace tally
