#include "common/error.hpp"

namespace tally {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::ok: return "ok";
    case errc::invalid_argument: return "invalid_argument";
    case errc::overflow: return "overflow";
    case errc::bad_config: return "bad_config";
    case errc::corrupt: return "corrupt";
    case errc::wrong_type: return "wrong_type";
    case errc::not_found: return "not_found";
    case errc::io_error: return "io_error";
    case errc::storage_full: return "storage_full";
    case errc::unavailable: return "unavailable";
    case errc::aborted: return "aborted";
    case errc::timeout: return "timeout";
    case errc::gave_way: return "gave_way";
    case errc::no_permissions: return "no_permissions";
  }
  return "unknown";
}

std::string error::to_string() const {
  std::string out{tally::to_string(code_)};
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

bool is_known_errc(std::uint32_t value) noexcept {
  if (value == 0 || value > 0xff)
    return false;
  return to_string(static_cast<errc>(value)) != "unknown";
}

} // namespace tally
