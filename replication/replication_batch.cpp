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

// Version 1: no dependency after the records.
constexpr std::uint8_t batch_version_without_deps = 1;

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  put_be64(b, v);
  out.append(b, 8);
}

// The dependency section of version 2 (after the records); `in` is what
// is left of the payload, consumed.
expected<std::optional<batch_dependency>> decode_deps(std::string_view& in) {
  if (in.empty())
    return corrupt("truncated dependency");
  const auto flag = static_cast<unsigned char>(in[0]);
  in.remove_prefix(1);
  if (flag == 0)
    return std::optional<batch_dependency>{};
  if (flag != 1)
    return corrupt("bad dependency flag " + std::to_string(flag));
  if (in.size() < 28)
    return corrupt("truncated dependency");
  const lsn at = get_be64(in.data());
  const tx_id tx{get_be64(in.data() + 8), get_be64(in.data() + 16)};
  const std::uint32_t len = get_be32(in.data() + 24);
  in.remove_prefix(28);
  if (len > in.size())
    return corrupt("truncated dependency clock");
  auto clock = bloom_clock::decode(in.substr(0, len));
  if (!clock)
    return corrupt("dependency clock: " + clock.err().message());
  in.remove_prefix(len);
  return std::optional<batch_dependency>{batch_dependency{std::move(*clock), at, tx}};
}

} // namespace

std::optional<batch_dependency> dependency_within(const batch_dependency& base, lsn first,
                                                  const std::vector<journal_record>& records,
                                                  lsn at) {
  if (at < first || at - first > records.size())
    return std::nullopt;
  // The last commit with a timestamp below `at` decides; none: `base`.
  for (lsn i = at - first; i-- > 0;) {
    const auto* c = std::get_if<commit_record>(&records[i]);
    if (!c || c->bloom_timestamp.empty())
      continue;
    auto clock = bloom_clock::decode(c->bloom_timestamp);
    if (!clock)
      return std::nullopt;
    return batch_dependency{std::move(*clock), first + i, c->tx};
  }
  return base;
}

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
  if (!b.deps) {
    payload.push_back('\0');
  } else {
    payload.push_back('\1');
    put_u64(payload, b.deps->commit_at);
    put_u64(payload, b.deps->commit_tx.origin);
    put_u64(payload, b.deps->commit_tx.seq);
    const auto clock = b.deps->clock.encode();
    put_be32(payload, static_cast<std::uint32_t>(clock.size()));
    payload += clock;
  }
  std::string out;
  append_frame(out, replication_batch_version, payload);
  return out;
}

expected<replication_batch> decode_batch(std::string_view bytes) {
  // Version 1 (no dependency) is read as well.
  const std::uint8_t version =
    !bytes.empty() && static_cast<std::uint8_t>(bytes[0]) == batch_version_without_deps
      ? batch_version_without_deps
      : replication_batch_version;
  auto payload = open_frame(bytes, version, "replication batch");
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
  if (version != batch_version_without_deps) {
    auto deps = decode_deps(in);
    if (!deps)
      return deps.err();
    out.deps = std::move(*deps);
  }
  if (!in.empty())
    return corrupt(std::to_string(in.size()) + " trailing bytes");
  return out;
}

} // namespace tally
