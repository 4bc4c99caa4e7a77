// libFuzzer target: journal/codec.hpp decoders of bytes read back from LMDB
// (a torn or corrupt file): records, LSN keys, object keys, index values,
// op-id index entries, u64 metadata, decision index entries and their
// transaction keys, meta folded_term. Byte 0 picks the decoder. Whatever
// decodes re-encodes to bytes that decode to the same re-encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "journal/codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t which = data[0] % 9;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (which) {
    case 0:
      if (auto r = tally::decode_record(in)) {
        auto bytes = tally::encode_record(r.value());
        auto again = tally::decode_record(bytes);
        if (!again || tally::encode_record(again.value()) != bytes) std::abort();
      }
      break;
    case 1:
      (void)tally::decode_lsn_key(in);
      break;
    case 2:
      // decode_object_key() refuses more than encode_object_key() writes
      // (max_object_key_bytes), so every key it accepts round-trips.
      if (auto k = tally::decode_object_key(in)) {
        auto bytes = tally::encode_object_key(k.value());
        if (!bytes) std::abort();
        auto again = tally::decode_object_key(bytes.value());
        if (!again || tally::encode_object_key(again.value()).value() != bytes.value()) std::abort();
      }
      break;
    case 3:
      if (auto v = tally::decode_index_value(in)) {
        auto again = tally::decode_index_value(tally::encode_index_value(v.value()));
        if (!again || !(again.value() == v.value())) std::abort();
      }
      break;
    case 4:
      if (auto e = tally::decode_op_entry(in)) {
        auto again = tally::decode_op_entry(tally::encode_op_entry(e.value()));
        if (!again || again.value().commit != e.value().commit ||
            again.value().digest != e.value().digest) std::abort();
      }
      break;
    case 5:
      if (auto u = tally::decode_u64(in, "fuzz")) {
        auto again = tally::decode_u64(tally::encode_u64(u.value()), "fuzz");
        if (!again || again.value() != u.value()) std::abort();
      }
      break;
    case 6:
      if (auto e = tally::decode_decision_entry(in)) {
        auto again = tally::decode_decision_entry(tally::encode_decision_entry(e.value()));
        if (!again || !(again.value() == e.value())) std::abort();
      }
      break;
    case 7:
      if (auto t = tally::decode_tx_key(in)) {
        auto again = tally::decode_tx_key(tally::encode_tx_key(t.value()));
        if (!again || !(again.value() == t.value())) std::abort();
      }
      break;
    default:
      if (auto t = tally::decode_term_value(in)) {
        auto again = tally::decode_term_value(tally::encode_term_value(t.value()));
        if (!again || !(again.value() == t.value())) std::abort();
      }
      break;
  }
  return 0;
}
