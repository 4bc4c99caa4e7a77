#include "journal/codec.hpp"

#include <cstring>
#include <istream>
#include <ostream>

#include <cereal/archives/portable_binary.hpp>

#include "common/bounded_input_archive.hpp"
#include "common/crc32c.hpp"
#include "common/hash.hpp"
#include "common/membuf.hpp"
#include "crdt/map_op_shape.hpp"

namespace tally {

namespace {

void put_le32(char* out, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xffu);
}

std::uint32_t get_le32(const char* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i]))
         << (8 * i);
  return v;
}

// The record kind byte that precedes the record in the payload. Persisted:
// never renumber, only append.
enum class record_kind : std::uint8_t {
  update = 0,
  prepare = 1,
  commit = 2,
  abort = 3,
  term = 4,
  fence = 5,
};

static_assert(std::variant_size_v<journal_record> == 6,
              "a new record type needs a record_kind and a decoder case");

} // namespace

void append_frame(std::string& out, std::uint8_t version,
                  std::string_view payload) {
  char header[frame_header_size];
  header[0] = static_cast<char>(version);
  put_le32(header + 1, static_cast<std::uint32_t>(payload.size()));
  put_le32(header + 5, crc32c(payload));
  out.append(header, frame_header_size);
  out.append(payload.data(), payload.size());
}

std::uint64_t frame_size(std::string_view bytes) noexcept {
  if (bytes.size() < frame_header_size)
    return 0;
  return frame_header_size + std::uint64_t{get_le32(bytes.data() + 1)};
}

expected<std::string_view> open_frame(std::string_view frame,
                                      std::uint8_t version, const char* what) {
  if (frame.size() < frame_header_size)
    return make_error(errc::corrupt,
                      std::string{what} + ": " + std::to_string(frame.size())
                        + " bytes, shorter than a frame header");
  auto v = static_cast<std::uint8_t>(frame[0]);
  if (v != version)
    return make_error(errc::corrupt, std::string{what}
                                       + ": unknown frame version "
                                       + std::to_string(v) + " (expected "
                                       + std::to_string(version) + ")");
  auto len = get_le32(frame.data() + 1);
  if (len != frame.size() - frame_header_size)
    return make_error(errc::corrupt,
                      std::string{what} + ": payload length " + std::to_string(len)
                        + " does not match the "
                        + std::to_string(frame.size() - frame_header_size)
                        + " bytes stored");
  auto payload = frame.substr(frame_header_size);
  auto stored = get_le32(frame.data() + 5);
  auto actual = crc32c(payload);
  if (stored != actual)
    return make_error(errc::corrupt, std::string{what} + ": checksum mismatch");
  return payload;
}

void encode_record(const journal_record& r, std::string& out) {
  out.clear();
  out.resize(frame_header_size);
  {
    detail::string_sink sink{out};
    std::ostream os{&sink};
    cereal::PortableBinaryOutputArchive ar{os};
    ar(static_cast<std::uint8_t>(r.index()));
    std::visit([&](const auto& rec) { ar(rec); }, r);
  }
  auto payload_size = out.size() - frame_header_size;
  out[0] = static_cast<char>(record_frame_version);
  put_le32(out.data() + 1, static_cast<std::uint32_t>(payload_size));
  put_le32(out.data() + 5,
           crc32c_extend(0, out.data() + frame_header_size, payload_size));
}

std::string encode_record(const journal_record& r) {
  std::string out;
  encode_record(r, out);
  return out;
}

expected<journal_record> decode_record(std::string_view bytes) {
  auto payload = open_frame(bytes, record_frame_version, "journal record");
  if (!payload)
    return payload.err();
  try {
    // Lengths are checked against the bytes left before anything is
    // allocated for them (common/bounded_input_archive.hpp).
    bounded_input_archive ar{*payload};
    std::uint8_t kind = 0;
    ar(kind);
    journal_record out;
    switch (static_cast<record_kind>(kind)) {
      case record_kind::update: {
        update_record r;
        ar(r);
        out = std::move(r);
        break;
      }
      case record_kind::prepare: {
        prepare_record r;
        ar(r);
        out = r;
        break;
      }
      case record_kind::commit: {
        commit_record r;
        ar(r);
        out = std::move(r);
        break;
      }
      case record_kind::abort: {
        abort_record r;
        ar(r);
        out = r;
        break;
      }
      case record_kind::term: {
        term_record r;
        ar(r);
        out = std::move(r);
        break;
      }
      case record_kind::fence: {
        fence_record r;
        ar(r);
        out = r;
        break;
      }
      default:
        return make_error(errc::corrupt, "journal record: unknown record kind "
                                           + std::to_string(kind));
    }
    if (ar.remaining() != 0)
      return make_error(errc::corrupt,
                        "journal record: " + std::to_string(ar.remaining())
                          + " trailing bytes after the record");
    return out;
  } catch (const std::exception& e) {
    // cereal::Exception for truncation and unknown versions; std::bad_alloc
    // or std::length_error for a garbage string length that passed the CRC.
    return make_error(errc::corrupt,
                      std::string{"journal record: undecodable payload: "}
                        + e.what());
  }
}

void put_be64(char* out, std::uint64_t v) noexcept {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xffu);
    v >>= 8;
  }
}

std::uint64_t get_be64(const char* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

std::string lsn_key(lsn position) {
  std::string k(lsn_key_size, '\0');
  put_be64(k.data(), position);
  return k;
}

expected<lsn> decode_lsn_key(std::string_view key) {
  if (key.size() != lsn_key_size)
    return make_error(errc::corrupt, "journal key of " + std::to_string(key.size())
                                       + " bytes; an LSN key has 8");
  return get_be64(key.data());
}

expected<std::string> encode_object_key(const object_key& k) {
  auto n = k.bucket.size() + k.key.size();
  if (n > max_object_key_bytes)
    return make_error(errc::invalid_argument,
                      "object key " + k.bucket.substr(0, 32) + "/"
                        + k.key.substr(0, 32) + "...: bucket and key use "
                        + std::to_string(n) + " bytes, at most "
                        + std::to_string(max_object_key_bytes)
                        + " fit an LMDB key");
  std::string out;
  out.reserve(2 + n);
  out.push_back(static_cast<char>((k.bucket.size() >> 8) & 0xffu));
  out.push_back(static_cast<char>(k.bucket.size() & 0xffu));
  out += k.bucket;
  out += k.key;
  return out;
}

expected<object_key> decode_object_key(std::string_view bytes) {
  if (bytes.size() < 2)
    return make_error(errc::corrupt, "object key of " + std::to_string(bytes.size())
                                       + " bytes, shorter than its header");
  std::size_t blen = (static_cast<std::size_t>(static_cast<unsigned char>(bytes[0])) << 8)
                     | static_cast<unsigned char>(bytes[1]);
  if (blen > bytes.size() - 2)
    return make_error(errc::corrupt, "object key: bucket length "
                                       + std::to_string(blen)
                                       + " exceeds the stored bytes");
  // encode_object_key() never writes more (found by fuzz_journal: the
  // decoder used to accept what the encoder refuses).
  if (bytes.size() - 2 > max_object_key_bytes)
    return make_error(errc::corrupt, "object key of " + std::to_string(bytes.size() - 2)
                                       + " bytes, more than the "
                                       + std::to_string(max_object_key_bytes)
                                       + " an encoder writes");
  object_key k;
  k.bucket.assign(bytes.data() + 2, blen);
  k.key.assign(bytes.data() + 2 + blen, bytes.size() - 2 - blen);
  return k;
}

std::string encode_index_value(index_value v) {
  std::string out(index_value_size, '\0');
  put_be64(out.data(), v.commit);
  put_be64(out.data() + 8, v.update);
  return out;
}

expected<index_value> decode_index_value(std::string_view bytes) {
  if (bytes.size() != index_value_size)
    return make_error(errc::corrupt, "index value of " + std::to_string(bytes.size())
                                       + " bytes; an index value has 16");
  return index_value{get_be64(bytes.data()), get_be64(bytes.data() + 8)};
}

std::string encode_op_key(const op_id& id) {
  std::string out(op_key_size, '\0');
  put_be64(out.data(), id.client);
  put_be64(out.data() + 8, id.seq);
  return out;
}

std::string encode_term_value(const copy_term& t) {
  std::string out(8, '\0');
  put_be64(out.data(), t.n);
  out += t.by;
  return out;
}

expected<copy_term> decode_term_value(std::string_view bytes) {
  if (bytes.size() < 8)
    return make_error(errc::corrupt, "meta term value (folded_term or promised_term): "
                                       + std::to_string(bytes.size())
                                       + " bytes, shorter than a term number");
  return copy_term{get_be64(bytes.data()), std::string{bytes.substr(8)}};
}

std::string encode_led_set_value(const led_copy_set& s) {
  std::string out(8, '\0');
  put_be64(out.data(), s.ring_epoch);
  auto add = [&out](const std::string& id) {
    char len[8];
    put_be64(len, id.size());
    out.append(len, 8);
    out += id;
  };
  add(s.store_node);
  for (const auto& o : s.others)
    add(o);
  return out;
}

expected<led_copy_set> decode_led_set_value(std::string_view bytes) {
  const std::size_t total = bytes.size();
  auto bad = [total](const std::string& why) {
    return make_error(errc::corrupt, "meta led_set: " + why + " (" + std::to_string(total)
                                       + " bytes)");
  };
  if (bytes.size() < 16)
    return bad("shorter than an epoch and a node id");
  led_copy_set s;
  s.ring_epoch = get_be64(bytes.data());
  bytes.remove_prefix(8);
  bool first = true;
  while (!bytes.empty()) {
    if (bytes.size() < 8)
      return bad("a node id's length is cut short");
    const std::uint64_t len = get_be64(bytes.data());
    if (len > bytes.size() - 8)
      return bad("a node id runs past the value's end");
    std::string id{bytes.substr(8, static_cast<std::size_t>(len))};
    bytes.remove_prefix(8 + static_cast<std::size_t>(len));
    if (first)
      s.store_node = std::move(id);
    else
      s.others.push_back(std::move(id));
    first = false;
  }
  return s;
}

std::string encode_u64(std::uint64_t v) {
  std::string out(8, '\0');
  put_be64(out.data(), v);
  return out;
}

expected<std::uint64_t> decode_u64(std::string_view bytes, const char* what) {
  if (bytes.size() != 8)
    return make_error(errc::corrupt, std::string{what} + ": "
                                       + std::to_string(bytes.size())
                                       + " bytes; expected an 8-byte integer");
  return get_be64(bytes.data());
}

std::uint64_t op_digest(const object_key& key, crdt_type type,
                        const crdt_effect& effect) {
  // The bucket length first, as in encode_object_key, so that bucket/key
  // splits never collide; no length limit here (a digest, not a key).
  std::string bytes;
  bytes.reserve(key.bucket.size() + key.key.size() + 16);
  bytes.append(encode_u64(key.bucket.size()));
  bytes.append(key.bucket);
  bytes.append(key.key);
  bytes.push_back(static_cast<char>(type));
  // A map update's resend is prepared anew (fresh tokens and timestamps):
  // its digest covers its shape, the entries it updates and their nested
  // counter deltas (crdt/map_op_shape.hpp). Maps carried no op id before,
  // so no stored digest changes meaning; the marker byte keeps the two
  // kinds of input apart.
  if (auto shape = map_op_shape(effect)) {
    bytes.push_back('S');
    bytes.append(*shape);
  } else {
    bytes.append(encode_effect(effect));
  }
  auto h = hash_bytes(bytes, 0x6f7069645f646967ull); // "opid_dig"
  return h == 0 ? 1 : h;
}

std::string encode_op_entry(const op_entry& e) {
  std::string out(e.digest ? 16 : 8, '\0');
  put_be64(out.data(), e.commit);
  if (e.digest)
    put_be64(out.data() + 8, *e.digest);
  return out;
}

expected<op_entry> decode_op_entry(std::string_view bytes) {
  if (bytes.size() != 8 && bytes.size() != 16)
    return make_error(errc::corrupt, "opids entry: "
                                       + std::to_string(bytes.size())
                                       + " bytes; expected 8 or 16");
  op_entry e;
  e.commit = get_be64(bytes.data());
  if (bytes.size() == 16)
    e.digest = get_be64(bytes.data() + 8);
  return e;
}

std::string encode_tx_key(const tx_id& tx) {
  std::string out(tx_key_size, '\0');
  put_be64(out.data(), tx.origin);
  put_be64(out.data() + 8, tx.seq);
  return out;
}

expected<tx_id> decode_tx_key(std::string_view bytes) {
  if (bytes.size() != tx_key_size)
    return make_error(errc::corrupt, "decisions key: " + std::to_string(bytes.size())
                                       + " bytes; expected 16");
  return tx_id{get_be64(bytes.data()), get_be64(bytes.data() + 8)};
}

std::string encode_decision_entry(const decision_entry& e) {
  std::string out(decision_entry_size, '\0');
  out[0] = static_cast<char>(e.outcome);
  put_be64(out.data() + 1, e.at);
  put_be64(out.data() + 9, e.time);
  return out;
}

expected<decision_entry> decode_decision_entry(std::string_view bytes) {
  if (bytes.size() != decision_entry_size)
    return make_error(errc::corrupt, "decisions entry: " + std::to_string(bytes.size())
                                       + " bytes; expected 17");
  const auto kind = static_cast<std::uint8_t>(bytes[0]);
  if (kind != static_cast<std::uint8_t>(tx_outcome::committed)
      && kind != static_cast<std::uint8_t>(tx_outcome::aborted))
    return make_error(errc::corrupt, "decisions entry: unknown outcome "
                                       + std::to_string(kind));
  return decision_entry{static_cast<tx_outcome>(kind), get_be64(bytes.data() + 1),
                        get_be64(bytes.data() + 9)};
}

} // namespace tally
