#include "protocol/frame.hpp"

#include <algorithm>
#include <utility>

namespace tally {

expected<std::string> encode_frame(std::uint8_t code, std::string_view body,
                                   std::uint32_t max_frame_size) {
  // Compared in 64 bits: body.size() + 1 must not wrap.
  auto length = static_cast<std::uint64_t>(body.size()) + 1;
  if (length > max_frame_size)
    return make_error(errc::invalid_argument,
                      "frame of " + std::to_string(length)
                        + " bytes (code + body) exceeds the limit of "
                        + std::to_string(max_frame_size) + " bytes");
  std::string out;
  out.reserve(frame_length_size + length);
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((length >> shift) & 0xff));
  out.push_back(static_cast<char>(code));
  out.append(body);
  return out;
}

expected<std::string> encode_frame(const frame& f,
                                   std::uint32_t max_frame_size) {
  return encode_frame(f.code, f.body, max_frame_size);
}

frame_decoder::frame_decoder(std::uint32_t max_frame_size)
    : max_frame_size_(std::max<std::uint32_t>(max_frame_size, 1)) {}

status frame_decoder::fail(error err) {
  error_ = std::move(err);
  return *error_;
}

status frame_decoder::feed(std::string_view bytes) {
  if (error_)
    return *error_;
  while (!bytes.empty()) {
    if (header_fill_ < frame_length_size) {
      // The big-endian length accumulates one byte at a time, so a length
      // split across chunks needs no buffer.
      while (header_fill_ < frame_length_size && !bytes.empty()) {
        length_ = (length_ << 8) | static_cast<unsigned char>(bytes.front());
        ++header_fill_;
        bytes.remove_prefix(1);
      }
      if (header_fill_ < frame_length_size)
        break;
      auto length = length_;
      if (length == 0)
        return fail(make_error(errc::corrupt,
                               "frame length 0: a frame holds at least its "
                               "code byte"));
      if (length > max_frame_size_)
        return fail(make_error(errc::invalid_argument,
                               "frame of " + std::to_string(length)
                                 + " bytes exceeds the limit of "
                                 + std::to_string(max_frame_size_)
                                 + " bytes"));
      if (admit_)
        if (auto st = admit_(length); !st)
          return fail(st.err());
      remaining_ = length;
      have_code_ = false;
      current_ = frame{};
      current_.body.reserve(length - 1);
      continue;
    }
    if (!have_code_) {
      current_.code = static_cast<std::uint8_t>(bytes.front());
      have_code_ = true;
      bytes.remove_prefix(1);
      --remaining_;
    }
    auto n = std::min<std::size_t>(remaining_, bytes.size());
    current_.body.append(bytes.data(), n);
    remaining_ -= static_cast<std::uint32_t>(n);
    bytes.remove_prefix(n);
    if (remaining_ == 0) {
      ready_.push_back(std::move(current_));
      current_ = frame{};
      header_fill_ = 0;
      length_ = 0;
      have_code_ = false;
    }
  }
  return {};
}

std::optional<frame> frame_decoder::next() {
  if (ready_.empty())
    return std::nullopt;
  auto f = std::move(ready_.front());
  ready_.pop_front();
  return f;
}

status frame_decoder::finish() const {
  if (error_)
    return *error_;
  if (header_fill_ == 0)
    return {};
  if (header_fill_ < frame_length_size)
    return make_error(errc::corrupt,
                      "stream ended inside a frame's length ("
                        + std::to_string(header_fill_) + " of "
                        + std::to_string(frame_length_size) + " bytes)");
  return make_error(errc::corrupt, "stream ended inside a frame: "
                                     + std::to_string(remaining_)
                                     + " more bytes were announced");
}

} // namespace tally
