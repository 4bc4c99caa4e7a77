#include "journal/write_ahead_tail.hpp"

#include <cstdint>

#include "journal/codec.hpp"

namespace tally {

void append_tail_entry(std::string& out, lsn at, std::string_view record_frame) {
  char key[8];
  put_be64(key, at);
  out.append(key, sizeof key);
  out.append(record_frame.data(), record_frame.size());
}

parsed_tail parse_tail(std::string_view bytes) {
  parsed_tail out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    // Zeros to the end: the room the file keeps ahead of its entries
    // (lmdb_env::preallocate_tail), a clean end. LSNs start at 1, so no
    // entry begins with eight zero bytes.
    if (bytes.find_first_not_of('\0', pos) == std::string_view::npos)
      break;
    const std::size_t left = bytes.size() - pos;
    if (left < 8 + frame_header_size) {
      out.stop_reason = "an entry cut short at byte " + std::to_string(pos);
      break;
    }
    const lsn at = get_be64(bytes.data() + pos);
    const std::uint64_t frame = frame_size(bytes.substr(pos + 8));
    if (frame > left - 8) {
      out.stop_reason = "an entry cut short at byte " + std::to_string(pos);
      break;
    }
    if (!out.records.empty() && at != out.records.back().first + 1) {
      out.stop_reason = "LSN " + std::to_string(at) + " after LSN "
                        + std::to_string(out.records.back().first) + " at byte "
                        + std::to_string(pos);
      break;
    }
    auto rec = decode_record(bytes.substr(pos + 8, frame));
    if (!rec) {
      out.stop_reason = "a bad entry at byte " + std::to_string(pos) + " ("
                        + rec.err().message() + ")";
      break;
    }
    out.records.emplace_back(at, std::move(*rec));
    pos += 8 + frame;
    out.valid_bytes = pos;
  }
  return out;
}

} // namespace tally
