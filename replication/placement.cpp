#include "replication/placement.hpp"

#include <algorithm>

namespace tally {

std::vector<node_id> copy_nodes(const ring_state& ring, std::uint32_t p) {
  const auto& owners = ring.owners().owners;
  std::vector<node_id> out;
  const std::size_t q = owners.size();
  for (std::size_t i = 0; i < q && out.size() < ring.n_val(); ++i) {
    const auto& n = owners[(p + i) % q];
    if (std::find(out.begin(), out.end(), n) == out.end())
      out.push_back(n);
  }
  return out;
}

bool in_copy_set(const ring_state& ring, std::uint32_t p, const node_id& node) {
  auto nodes = copy_nodes(ring, p);
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

std::uint32_t default_n_val_for(std::size_t nodes) noexcept {
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(nodes, 1, 3));
}

std::uint32_t majority_of(std::uint32_t n_val) noexcept {
  return n_val / 2 + 1;
}

std::optional<node_id> acting_primary(const std::vector<replica>& preference,
                                      const std::function<bool(const node_id&)>& up) {
  for (const auto& r : preference)
    if (up(r.node))
      return r.node;
  return std::nullopt;
}

bool has_write_quorum(const std::vector<replica>& preference, std::uint32_t w,
                      const std::function<bool(const node_id&)>& up) {
  std::vector<node_id> seen;
  for (const auto& r : preference)
    if (std::find(seen.begin(), seen.end(), r.node) == seen.end()) {
      seen.push_back(r.node);
    }
  auto alive = std::count_if(seen.begin(), seen.end(), up);
  return static_cast<std::uint32_t>(alive) >= w;
}

std::vector<node_id> other_replicas(const std::vector<replica>& preference,
                                    const node_id& self) {
  std::vector<node_id> out;
  for (const auto& r : preference)
    if (r.node != self && std::find(out.begin(), out.end(), r.node) == out.end())
      out.push_back(r.node);
  return out;
}

} // namespace tally
