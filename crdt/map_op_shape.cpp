#include "crdt/map_op_shape.hpp"

#include <type_traits>

#include "crdt/byte_codec.hpp"

namespace tally {

namespace {

void write_shape(byte_writer& out, const std::vector<keyed_effect>& updates) {
  out.varint(updates.size());
  for (const auto& e : updates) {
    out.bytes(e.key.key);
    write_type(out, e.key.type);
    std::visit(
      [&out](const auto& nested) {
        using T = std::decay_t<decltype(nested)>;
        if constexpr (std::is_same_v<T, counter_effect>)
          out.svarint(nested.delta);
        else if constexpr (std::is_same_v<T, g_map_effect>
                           || std::is_same_v<T, rr_map_effect>)
          write_shape(out, nested.updates);
      },
      e.effect);
  }
}

} // namespace

std::optional<std::string> map_op_shape(const any_effect& effect) {
  const std::vector<keyed_effect>* updates = nullptr;
  if (const auto* g = std::get_if<g_map_effect>(&effect))
    updates = &g->updates;
  else if (const auto* r = std::get_if<rr_map_effect>(&effect))
    updates = &r->updates;
  if (!updates)
    return std::nullopt;
  byte_writer out;
  write_shape(out, *updates);
  return std::move(out).take();
}

bool has_nested_counter(const map_update& u) {
  for (const auto& k : u.updates) {
    if (std::holds_alternative<counter_update>(k.update))
      return true;
    if (const auto* m = std::get_if<map_update>(&k.update); m && has_nested_counter(*m))
      return true;
  }
  return false;
}

} // namespace tally
