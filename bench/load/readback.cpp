#include "bench/load/readback.hpp"

#include <algorithm>

#include "bench/load/driver.hpp"

namespace tally::load {

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

std::string check_set(const std::vector<std::string>& before,
                      const std::vector<std::string>& after, const set_marks& m,
                      unsigned elements) {
  for (const auto& x : after) {
    bool sent = false;
    for (unsigned i = 0; i < elements && !sent; ++i)
      sent = (m.add_sent >> i & 1) != 0 && x == element_of(i);
    if (!sent && !has(before, x))
      return "element '" + x + "' is present but was neither there before nor added";
  }
  for (unsigned i = 0; i < elements; ++i) {
    const bool removed = (m.remove_sent >> i & 1) != 0;
    const std::string x = element_of(i);
    if (removed || has(after, x))
      continue;
    if ((m.add_acked >> i & 1) != 0)
      return "element '" + x + "' was added (acknowledged), never removed, and is missing";
    if (has(before, x))
      return "element '" + x + "' was there before, never removed, and is missing";
  }
  return {};
}

std::string check_register(const std::string& before, const std::string& after,
                           const register_marks& m) {
  bool sent = false;
  for (auto id : m.sent)
    if (after == register_value_of(id)) {
      sent = true;
      break;
    }
  if (sent)
    return {};
  if (m.acked)
    return "holds '" + after + "', not one of the " + std::to_string(m.sent.size())
           + " values assigned to it";
  if (after != before)
    return "holds '" + after + "', neither its value before ('" + before
           + "') nor a value assigned to it";
  return {};
}

} // namespace tally::load
