// libFuzzer target: crdt/crdt_codec.hpp decode_typed_state and
// decode_typed_effect (checkpoint states and journal or replication effects
// of every CRDT type). The first byte selects which (even: state, odd:
// effect). Whatever decodes must re-encode to exactly the input bytes (the
// encodings are canonical), and reading its value must not crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crdt/crdt_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    if (auto s = tally::decode_typed_state(in)) {
      if (tally::encode_typed_state(s->type, s->state) != in) std::abort();
      (void)tally::value_of(s->state);
    }
  } else if (auto e = tally::decode_typed_effect(in)) {
    if (tally::encode_typed_effect(e->type, e->effect) != in) std::abort();
  }
  return 0;
}
