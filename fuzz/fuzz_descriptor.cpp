// libFuzzer target: protocol/descriptor.hpp decode_tx_descriptor and
// decode_clock, clock/vector_clock.hpp vector_clock::decode. Whatever
// decodes re-encodes to bytes that decode to an equal value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "clock/vector_clock.hpp"
#include "protocol/descriptor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto d = tally::decode_tx_descriptor(in)) {
    auto again = tally::decode_tx_descriptor(tally::encode_tx_descriptor(d.value()));
    if (!again || !(again.value() == d.value())) std::abort();
  }
  if (auto c = tally::decode_clock(in)) {
    auto again = tally::decode_clock(tally::encode_clock(c.value()));
    if (!again || !(again.value() == c.value())) std::abort();
  }
  if (auto v = tally::vector_clock::decode(in)) {
    auto again = tally::vector_clock::decode(v.value().encode());
    if (!again || !(again.value() == v.value())) std::abort();
  }
  return 0;
}
