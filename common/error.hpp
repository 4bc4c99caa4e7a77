// One error type for the whole project (STYLE.md, habit 2). Errors are values:
// functions that can fail return tally::expected<T> (common/expected.hpp).
// The codes are stable numbers: they are written into replies between nodes,
// so a code is never renumbered, only appended.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace tally {

enum class errc : std::uint8_t {
  ok = 0,
  // The caller passed a value outside the documented domain (a bad parameter,
  // a malformed key, a ring size that is not a power of two, ...).
  invalid_argument = 1,
  // A counter value or a clock entry would leave its 64-bit range.
  overflow = 2,
  // A configuration is self-contradictory or unsafe (for example an FBF window
  // shorter than the client retry timeout).
  bad_config = 3,
  // Bytes could not be decoded: wrong version, bad checksum, truncated.
  corrupt = 4,
  // The operation does not apply to this CRDT type.
  wrong_type = 5,
  // A node, partition, key or peer is not known.
  not_found = 6,
  // A read, write or sync of stored data failed. After a failed sync the
  // journal refuses further writes (fail-stop): the log's state is unknown.
  io_error = 7,
  // The store or the disk is full; what is stored stays readable.
  storage_full = 8,
  // The component is closed, fail-stopped or not serving this request.
  unavailable = 9,
  // The transaction was aborted (explicitly, by timeout or by a failure).
  aborted = 10,
  // A request did not complete in its time limit.
  timeout = 11,
  // A two-phase prepare gave way to a transaction holding one of its op ids
  // that it may itself be blocking elsewhere (wait-die; nothing was
  // applied). Its coordinator retries it; clients see it as `aborted`.
  gave_way = 12,
  // A bounded counter's replica lacks the rights for a decrement or transfer
  // (AntidoteDB's no_permissions; its wire error code 2).
  no_permissions = 13,
};

/// Short stable name of a code, for logs and messages ("overflow").
std::string_view to_string(errc code) noexcept;

/// True for a number that names an errc other than ok. Codes travel as
/// numbers (Tally's protocol extensions); a newer node may send one this
/// build does not know.
bool is_known_errc(std::uint32_t value) noexcept;

inline std::ostream& operator<<(std::ostream& os, errc code) {
  return os << to_string(code);
}

/// An error code and a human-readable sentence that says what went wrong and,
/// where it helps, what to do instead.
class error {
public:
  error() = default;
  error(errc code, std::string message)
      : code_(code), message_(std::move(message)) {}

  errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// "overflow: counter value would exceed 2^63-1"
  std::string to_string() const;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(code_, message_);
  }

  friend bool operator==(const error& a, const error& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

private:
  errc code_ = errc::ok;
  std::string message_;
};

inline error make_error(errc code, std::string message) {
  return error{code, std::move(message)};
}

} // namespace tally
