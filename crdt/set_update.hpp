// The operations of the three sets (AntidoteDB's {add, E}, {add_all, Es},
// {remove, E}, {remove_all, Es}, {reset, {}}): one element is a list of one.
// Elements are byte strings. A grow-only set takes adds only.
#pragma once

#include <string>
#include <variant>
#include <vector>

namespace tally {

struct set_add {
  std::vector<std::string> elements;
};
struct set_remove {
  std::vector<std::string> elements;
};
/// Removes every element the preparing replica saw.
struct set_reset {};

using set_update = std::variant<set_add, set_remove, set_reset>;

} // namespace tally
