// libFuzzer target: protocol/messages.hpp decode_request and
// protocol/request_limits.hpp decode_valid_request. Byte 0 is the message
// code, the rest the protobuf body. A decoded request re-encodes (the client
// encoder) to a frame that decodes again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "protocol/messages.hpp"
#include "protocol/request_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t code = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto req = tally::decode_request(code, body);
  if (req) {
    auto f = tally::encode_request(req.value());
    auto again = tally::decode_request(f.code, f.body);
    if (!again) std::abort();
  }
  static const tally::request_limits limits{};
  (void)tally::decode_valid_request(code, body, limits, 1'000'000'000'000ull);
  return 0;
}
