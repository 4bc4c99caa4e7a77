#include "actors/replica_sets.hpp"

#include <caf/actor_addr.hpp>
#include <caf/deep_to_string.hpp>

#include "replication/placement.hpp"

namespace tally {

std::string copy_config::key() const {
  std::string k = std::to_string(static_cast<int>(role)) + "|" + primary + "|"
                  + std::to_string(w) + (filling ? "|filling" : "");
  for (std::size_t i = 0; i < peers.size(); ++i)
    k += "|" + peers[i] + "@" + std::to_string(handles[i] ? handles[i].id() : 0) + ":"
         + caf::to_string(handles[i] ? handles[i].node() : caf::node_id{});
  return k;
}

partition_plan plan_partition(std::uint32_t p, const std::vector<copy_view>& copies,
                              const node_id& self) {
  partition_plan out;
  std::optional<std::size_t> primary;
  for (std::size_t i = 0; i < copies.size() && !primary; ++i)
    if (copies[i].handle && !copies[i].stale && !copies[i].filling)
      primary = i;
  const auto w = majority_of(static_cast<std::uint32_t>(copies.size()));
  if (primary) {
    out.where = route{copies[*primary].handle, copies[*primary].node, {}};
  } else {
    out.where.node = copies.empty() ? node_id{} : copies.front().node;
    out.where.why = "partition " + std::to_string(p) + ": none of its "
                    + std::to_string(copies.size())
                    + " copies is reachable and current; retry when a node is back";
  }
  for (std::size_t i = 0; i < copies.size(); ++i) {
    if (copies[i].node != self || !copies[i].handle)
      continue;
    copy_config c;
    c.w = w;
    c.primary = primary ? copies[*primary].node : node_id{};
    c.role = primary && *primary == i ? copy_role::primary : copy_role::replica;
    c.filling = copies[i].filling;
    for (std::size_t j = 0; j < copies.size(); ++j) {
      if (j == i)
        continue;
      c.peers.push_back(copies[j].node);
      c.handles.push_back(copies[j].stale ? caf::actor{} : copies[j].handle);
    }
    out.mine = std::move(c);
  }
  return out;
}

} // namespace tally
