// libFuzzer target: checkpoint/checkpoint_store.hpp decode_checkpoint_entry
// (checkpoint state read back from LMDB). Whatever decodes re-encodes to
// bytes that decode to the same re-encoding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "checkpoint/checkpoint_store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto e = tally::decode_checkpoint_entry(in)) {
    auto bytes = tally::encode_checkpoint_entry(e.value());
    auto again = tally::decode_checkpoint_entry(bytes);
    if (!again || tally::encode_checkpoint_entry(again.value()) != bytes) std::abort();
  }
  return 0;
}
