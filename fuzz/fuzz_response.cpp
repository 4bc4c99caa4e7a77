// libFuzzer target: protocol/messages.hpp decode_response (what a client
// decodes from server bytes). Byte 0 is the message code. A decoded response
// re-encodes to a frame that decodes again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/messages.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t code = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto resp = tally::decode_response(code, body);
  if (resp) {
    auto f = tally::encode_response(resp.value());
    auto again = tally::decode_response(f.code, f.body);
    if (!again) std::abort();
  }
  return 0;
}
