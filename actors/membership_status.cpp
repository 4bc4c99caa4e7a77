#include "actors/membership_status.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

#include "actors/copy_plan.hpp"
#include "actors/partition_core.hpp"
#include "replication/dependency_check.hpp"
#include "replication/placement.hpp"

namespace tally {

std::string ranges(const std::vector<std::uint32_t>& ps) {
  std::ostringstream os;
  for (std::size_t i = 0; i < ps.size();) {
    std::size_t j = i;
    while (j + 1 < ps.size() && ps[j + 1] == ps[j] + 1)
      ++j;
    if (i != 0)
      os << ",";
    os << ps[i];
    if (j > i)
      os << "-" << ps[j];
    i = j + 1;
  }
  return ps.empty() ? "-" : os.str();
}

std::string status_text(mem_self self) {
  auto& st = self->state;
  const auto& ring = *st.ring;
  std::ostringstream os;
  os << "cluster: " << ring.members().size() << " member(s), ring size "
     << ring.partition_count() << ", epoch " << ring.owners().epoch
     << ", this node " << self_id(self) << "\n";
  os << "node | status | reachable | owns | serves\n";
  for (const auto& [id, info] : ring.members()) {
    std::vector<std::uint32_t> owns, serves;
    for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
      const bool owner = ring.owners().owners[p] == id;
      if (owner)
        owns.push_back(p);
      // With n_val > 1 an owner may hold its copy in replicas/<p> (one
      // re-created after a removal): it serves that one.
      if (id == self_id(self)) {
        if (st.local[p] || (owner && replicated(self) && st.copies[p]))
          serves.push_back(p);
      } else if (auto i = st.peers.find(id);
                 i != st.peers.end() && i->second.up
                 && (i->second.parts[p]
                     || (owner && replicated(self) && p < i->second.copies.size()
                         && i->second.copies[p]))) {
        serves.push_back(p);
      }
    }
    bool up = id == self_id(self)
              || (st.peers.count(id) != 0 && st.peers.at(id).up);
    os << id << (id == self_id(self) ? " (this node)" : "") << " | "
       << info.status << " | " << (up ? "up" : "DOWN") << " | " << owns.size()
       << " [" << ranges(owns) << "] | " << serves.size() << " [" << ranges(serves)
       << "]\n";
  }
  if (st.out)
    os << "handoff in progress: partition " << st.out->p << " -> " << st.out->to << "\n";
  // Removals (docs/CLUSTER.md, "Removing a dead node"): kept in the ring
  // for the cluster's life, so a lost partition stays named as lost.
  // A lost partition has a line of its own; copies re-created from the
  // surviving ones are grouped per removed node.
  const auto now = wall_clock_us();
  std::map<std::pair<node_id, bool>, std::pair<std::uint64_t, std::vector<std::uint32_t>>>
    copied;
  for (const auto& [p, r] : ring.removals()) {
    const auto age = (now > r.at_us ? (now - r.at_us) / 1'000'000 : 0);
    if (!r.only_copy) {
      auto& g = copied[{r.from, r.recreated}];
      g.first = std::max(g.first, r.at_us);
      g.second.push_back(p);
      continue;
    }
    os << "removed " << r.from << " " << age << " s ago: partition " << p
       << " LOST (its only copy was there; removed with --force) and "
       << (r.recreated ? "re-created empty" : "to be re-created empty") << " on "
       << ring.owners().owners[p] << "\n";
  }
  for (const auto& [key, g] : copied)
    os << "removed " << key.first << " " << (now > g.first ? (now - g.first) / 1'000'000 : 0)
       << " s ago: copies " << (key.second ? "re-created" : "to be re-created")
       << " from the surviving copies | " << g.second.size() << " [" << ranges(g.second)
       << "]\n";
  if (!st.filling.empty())
    os << "copies filling on this node (not leading until caught up) | "
       << ranges(std::vector<std::uint32_t>(st.filling.begin(), st.filling.end())) << "\n";
  if (replicated(self)) {
    // docs/REPLICATION.md: which copy leads each partition, as routed here.
    os << "replication: n_val " << ring.n_val()
       << ", a write is acknowledged once a majority of its partition's copies have it\n";
    auto table = st.routes->load();
    std::map<node_id, std::vector<std::uint32_t>> leads;
    std::vector<std::uint32_t> none;
    for (std::uint32_t p = 0; p < table->size(); ++p)
      ((*table)[p].handle ? leads[(*table)[p].node] : none).push_back(p);
    os << "primary | partitions\n";
    for (const auto& [node, ps] : leads)
      os << node << " | " << ps.size() << " [" << ranges(ps) << "]\n";
    if (!none.empty())
      os << "no reachable copy | " << none.size() << " [" << ranges(none) << "]\n";
    // Current copies per partition on reachable nodes: n_val again once a
    // dead node's copies are re-created (docs/CLUSTER.md, "Removing a dead
    // node").
    std::vector<std::uint32_t> short_of;
    for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
      std::uint32_t current = 0;
      for (const auto& node : copy_nodes(ring, p))
        current += current_copy_on(self, p, node) ? 1 : 0;
      if (current < ring.n_val())
        short_of.push_back(p);
    }
    if (short_of.empty())
      os << "copies: every partition has " << ring.n_val() << " current copies\n";
    else
      os << "copies: fewer than " << ring.n_val() << " current copies | " << short_of.size()
         << " [" << ranges(short_of) << "]\n";
    if (!st.stale.empty())
      os << "stale copies on this node | "
         << ranges(std::vector<std::uint32_t>(st.stale.begin(), st.stale.end())) << "\n";
    if (st.cfg.dependency_checks)
      os << "bloom dependency checks of this node's copies since it started | "
         << describe(st.cfg.dependency_checks->total()) << "\n";
  }
  return os.str();
}

} // namespace tally
