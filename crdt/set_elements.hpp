// Helpers shared by the set encodings: element lists sorted, deduplicated,
// and decoded in strictly increasing order (one encoding per set).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "crdt/byte_codec.hpp"

namespace tally {

/// The distinct elements of `elements`, sorted (AntidoteDB's lists:usort).
inline std::vector<std::string> distinct_sorted(std::vector<std::string> elements) {
  std::sort(elements.begin(), elements.end());
  elements.erase(std::unique(elements.begin(), elements.end()), elements.end());
  return elements;
}

/// Refuses (fails `in`) an element that does not come strictly after
/// `previous`; `first` says there is no previous element.
inline void check_increasing(byte_reader& in, bool first,
                             const std::string& previous,
                             const std::string& next) {
  if (!first && !(previous < next))
    in.fail("set elements out of order or repeated");
}

} // namespace tally
