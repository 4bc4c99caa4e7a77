#include "crdt/crdt_type.hpp"

namespace tally {

std::string_view to_string(crdt_type type) noexcept {
  switch (type) {
    case crdt_type::counter: return "counter";
    case crdt_type::orset: return "orset";
    case crdt_type::lwwreg: return "lwwreg";
    case crdt_type::mvreg: return "mvreg";
    case crdt_type::gmap: return "gmap";
    case crdt_type::rwset: return "rwset";
    case crdt_type::rrmap: return "rrmap";
    case crdt_type::fatcounter: return "fatcounter";
    case crdt_type::flag_ew: return "flag_ew";
    case crdt_type::flag_dw: return "flag_dw";
    case crdt_type::bcounter: return "bcounter";
    case crdt_type::gset: return "gset";
  }
  return "unknown";
}

bool is_supported(crdt_type type) noexcept {
  switch (type) {
    case crdt_type::counter: case crdt_type::fatcounter: case crdt_type::orset:
    case crdt_type::rwset: case crdt_type::lwwreg: case crdt_type::mvreg:
    case crdt_type::flag_ew: case crdt_type::flag_dw: case crdt_type::gmap:
    case crdt_type::rrmap: case crdt_type::bcounter:
      return true;
    default:
      return false;
  }
}

bool crdt_type_from_wire(std::uint32_t wire, crdt_type& out) noexcept {
  switch (wire) {
    case 3: case 4: case 5: case 6: case 8: case 10: case 11: case 12:
    case 13: case 14: case 15:
      out = static_cast<crdt_type>(wire);
      return true;
    default:
      return false;
  }
}

} // namespace tally
