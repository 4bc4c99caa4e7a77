// Framing of the AntidoteDB client protocol (docs/PROTOCOL.md, "Framing"):
//
//   frame := length:u32 (big-endian) code:u8 body:bytes[length - 1]
//
// `length` counts the code byte plus the body, so it is never 0. The body is
// a protobuf message (protocol/messages.hpp decodes it).
//
// Plain values, no I/O: the connection actor feeds socket reads into a
// frame_decoder and writes encode_frame() bytes. Not thread-safe; one
// decoder per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/expected.hpp"

namespace tally {

/// One protocol message: its code byte (protocol/msg_code.hpp; kept raw so an
/// unknown code can still be reported) and its protobuf body.
struct frame {
  std::uint8_t code = 0;
  std::string body;

  friend bool operator==(const frame& a, const frame& b) {
    return a.code == b.code && a.body == b.body;
  }
  friend bool operator!=(const frame& a, const frame& b) { return !(a == b); }
};

/// Bytes of the length prefix.
constexpr std::size_t frame_length_size = 4;

/// Default limit on a frame's length field (code byte plus body): 16 MiB.
/// Why: Tally's requests name counters, so a real request is a few KiB even
/// for thousands of keys; the limit caps what one connection can make the
/// server buffer. It is configurable because antidote_ts_client's own tests
/// send ~165 MB register batches (ANTIDOTE-PROTOCOL.md), which a client
/// talking to AntidoteDB may need to encode.
constexpr std::uint32_t default_max_frame_size = 16u << 20;

/// The wire bytes of one frame. errc::invalid_argument, naming both sizes,
/// when 1 + body.size() exceeds `max_frame_size`: a peer with that limit
/// would refuse it.
expected<std::string> encode_frame(std::uint8_t code, std::string_view body,
                                   std::uint32_t max_frame_size
                                   = default_max_frame_size);
expected<std::string> encode_frame(const frame& f,
                                   std::uint32_t max_frame_size
                                   = default_max_frame_size);

/// Incremental decoder for a byte stream cut into arbitrary chunks, as reads
/// from a socket deliver it.
///
///   frame_decoder dec;
///   auto st = dec.feed(chunk);          // any size, even one byte
///   while (auto f = dec.next()) handle(*f);
///   if (!st) { reply an error, then close: the stream cannot resync }
///
/// Errors are sticky: once feed() has failed, the stream has no frame
/// boundary left to trust, so every later feed() returns the same error.
/// Frames completed before the bad header stay available from next(), so
/// requests that arrived intact can still be answered in order.
class frame_decoder {
public:
  /// `max_frame_size` limits the length field (code byte plus body); values
  /// below 1 are raised to 1.
  explicit frame_decoder(std::uint32_t max_frame_size = default_max_frame_size);

  /// Asked about every frame as soon as its 4 length bytes are in and its
  /// length (code byte plus body) is within the limit, before any byte of
  /// its body is buffered. An error refuses the frame: it becomes the
  /// decoder's sticky error (the server charges the frame to its memory
  /// budget here: server/request_memory_budget.hpp). Frames are asked about
  /// in stream order, so the i-th admitted frame is the i-th next() returns.
  using admission = std::function<status(std::uint32_t length)>;
  void set_admission(admission fn) { admit_ = std::move(fn); }

  /// Consumes `bytes`. Errors:
  /// - errc::corrupt: a length field of 0 (a frame needs its code byte);
  /// - errc::invalid_argument: a length field above the limit. It is
  ///   reported as soon as the 4 length bytes are in, before any byte of the
  ///   body is buffered, so a peer cannot make the decoder allocate it;
  /// - the admission's error, as soon as the 4 length bytes are in.
  /// An admitted frame's body buffer is reserved at its announced size
  /// once, so it is never reallocated (nor copied) while it fills; memory
  /// pages are touched only as bytes arrive.
  /// Never throws (except std::bad_alloc).
  status feed(std::string_view bytes);

  /// The oldest complete frame not yet taken, in stream order.
  std::optional<frame> next();

  /// To call when the peer closed the stream: errc::corrupt if it stopped
  /// inside a frame (a truncated frame), the sticky error if feed() failed,
  /// ok otherwise.
  status finish() const;

  /// True while part of a frame (even one length byte) is buffered.
  bool mid_frame() const noexcept { return header_fill_ > 0; }
  /// Memory held by the frame being received: its length bytes, code and
  /// the body's allocated capacity (which grows ahead of the bytes that
  /// arrived); complete frames not counted.
  std::size_t partial_bytes() const noexcept {
    return header_fill_ + (have_code_ ? 1 + current_.body.capacity() : 0);
  }

  bool failed() const noexcept { return error_.has_value(); }

  std::uint32_t max_frame_size() const noexcept { return max_frame_size_; }

private:
  status fail(error err);

  std::uint32_t max_frame_size_;
  std::size_t header_fill_ = 0; // length bytes read of the current frame
  std::uint32_t length_ = 0;    // the length bytes read so far, big-endian
  std::uint32_t remaining_ = 0; // code + body bytes still missing
  bool have_code_ = false;
  frame current_;
  std::deque<frame> ready_;
  std::optional<error> error_;
  admission admit_;
};

} // namespace tally
