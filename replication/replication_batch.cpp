#include "replication/replication_batch.hpp"

#include <cstring>

#include "journal/codec.hpp"

namespace tally {

namespace {

void put_be32(std::string& out, std::uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
               static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

std::uint32_t get_be32(const char* in) {
  auto u = [in](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

error corrupt(const std::string& why) {
  return make_error(errc::corrupt, "replication batch: " + why);
}

} // namespace

std::string encode_batch(const replication_batch& b) {
  std::string payload(8, '\0');
  put_be64(payload.data(), b.first);
  put_be32(payload, static_cast<std::uint32_t>(b.records.size()));
  std::string rec;
  for (const auto& r : b.records) {
    encode_record(r, rec);
    put_be32(payload, static_cast<std::uint32_t>(rec.size()));
    payload += rec;
  }
  std::string out;
  append_frame(out, replication_batch_version, payload);
  return out;
}

expected<replication_batch> decode_batch(std::string_view bytes) {
  auto payload = open_frame(bytes, replication_batch_version, "replication batch");
  if (!payload)
    return payload.err();
  std::string_view in = *payload;
  if (in.size() < 12)
    return corrupt("truncated header");
  replication_batch out;
  out.first = get_be64(in.data());
  const std::uint32_t count = get_be32(in.data() + 8);
  in.remove_prefix(12);
  // Each record takes at least its 4-byte length and a frame header.
  if (count > max_batch_records || count > in.size() / (4 + frame_header_size))
    return corrupt("record count " + std::to_string(count) + " is impossible");
  if (count != 0 && out.first > UINT64_MAX - count)
    return corrupt("LSN overflow");
  out.records.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    if (in.size() < 4)
      return corrupt("truncated record length");
    const std::uint32_t len = get_be32(in.data());
    in.remove_prefix(4);
    if (len > in.size())
      return corrupt("record " + std::to_string(i) + " is truncated");
    auto r = decode_record(in.substr(0, len));
    if (!r)
      return corrupt("record " + std::to_string(i) + ": " + r.err().message());
    out.records.push_back(std::move(*r));
    in.remove_prefix(len);
  }
  if (!in.empty())
    return corrupt(std::to_string(in.size()) + " trailing bytes");
  return out;
}

} // namespace tally
