// The operations of both flags (AntidoteDB's {enable,{}}, {disable,{}},
// {reset,{}}); a reset disables the flag and, inside a remove-resets map,
// removes it.
#pragma once

#include <cstdint>

namespace tally {

enum class flag_update : std::uint8_t { enable, disable, reset };

} // namespace tally
