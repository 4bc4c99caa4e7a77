#include "crdt/lww_register.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace tally {

void lww_effect::encode(byte_writer& out) const {
  out.varint(timestamp);
  out.bytes(value);
}

lww_effect lww_effect::decode(byte_reader& in) {
  lww_effect e;
  e.timestamp = in.varint();
  e.value = in.bytes();
  return e;
}

expected<lww_effect> lww_register::prepare(const register_update& update,
                                           downstream_context& ctx) const {
  if (timestamp_ == std::numeric_limits<std::uint64_t>::max())
    return make_error(errc::overflow, "lwwreg timestamp is at 2^64-1; no "
                                      "later assign can be ordered after it");
  lww_effect e;
  std::uint64_t wanted = ctx.now_us;
  if (const auto* a = std::get_if<register_assign>(&update)) {
    e.value = a->value;
    if (a->timestamp)
      wanted = *a->timestamp;
  }
  e.timestamp = std::max(wanted, timestamp_ + 1);
  return e;
}

status lww_register::apply(const lww_effect& effect) {
  if (std::tie(effect.timestamp, effect.value) > std::tie(timestamp_, value_)) {
    timestamp_ = effect.timestamp;
    value_ = effect.value;
  }
  return {};
}

void lww_register::encode(byte_writer& out) const {
  out.varint(timestamp_);
  out.bytes(value_);
}

lww_register lww_register::decode(byte_reader& in) {
  lww_register r;
  r.timestamp_ = in.varint();
  r.value_ = in.bytes();
  return r;
}

} // namespace tally
