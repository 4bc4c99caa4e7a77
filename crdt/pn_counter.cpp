#include "crdt/pn_counter.hpp"

#include <string>

namespace tally {

expected<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum))
    return make_error(errc::overflow,
                      "counter value " + std::to_string(a) + " plus "
                        + std::to_string(b)
                        + " leaves the 64-bit range [-2^63, 2^63-1]");
  return sum;
}

expected<counter_effect> pn_counter::prepare(counter_update update) const {
  auto sum = checked_add(value_, update.delta);
  if (!sum)
    return sum.err();
  return counter_effect{update.delta};
}

status pn_counter::apply(counter_effect effect) {
  auto sum = checked_add(value_, effect.delta);
  if (!sum)
    return sum.err();
  value_ = *sum;
  return {};
}

} // namespace tally
