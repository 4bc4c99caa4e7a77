// libFuzzer target: protocol/frame.hpp frame_decoder. The input is split
// into chunks whose sizes come from the input itself; every completed frame
// must re-encode to bytes that decode to the same frame.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/frame.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // First byte: a small max frame size sometimes, so the size check runs too.
  const std::uint32_t max = (data[0] & 1) ? 64u : tally::default_max_frame_size;
  std::uint8_t seed = data[0];
  ++data; --size;
  tally::frame_decoder dec(max);
  std::size_t pos = 0;
  while (pos < size) {
    seed = static_cast<std::uint8_t>(seed * 33u + 7u);
    std::size_t chunk = 1 + (seed % 17u);
    if (chunk > size - pos) chunk = size - pos;
    (void)dec.feed(std::string_view(reinterpret_cast<const char*>(data) + pos, chunk));
    pos += chunk;
    while (auto f = dec.next()) {
      auto bytes = tally::encode_frame(*f, max);
      if (!bytes) std::abort();  // a frame we accepted must be encodable
      tally::frame_decoder again(max);
      if (!again.feed(bytes.value())) std::abort();
      auto g = again.next();
      if (!g || !(*g == *f) || again.next() || !again.finish()) std::abort();
    }
  }
  (void)dec.finish();
  return 0;
}
