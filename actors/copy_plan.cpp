#include "actors/copy_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/replica_sets.hpp"
#include "common/log.hpp"
#include "replication/placement.hpp"

namespace tally {

namespace {

// How long a starting node waits for its peers before it configures its
// copies: a copy made primary before the node has heard that another copy
// leads could serve stale data.
constexpr std::chrono::milliseconds settle_time{3000};

} // namespace

// Settled once stays settled: a peer that dies later must not hold up the
// reconfiguration that its death calls for (issue 14's failover stall: a
// node younger than settle_time configured nothing after a kill -9 until
// settle_time had passed, up to 3 s of a partition without a primary).
bool settled(mem_self self) {
  auto& st = self->state;
  if (st.settled_once)
    return true;
  if (std::chrono::steady_clock::now() - st.started >= settle_time)
    return st.settled_once = true;
  for (const auto& [id, info] : st.ring->members()) {
    if (id == self_id(self) || gone(info.status))
      continue;
    auto i = st.peers.find(id);
    if (i == st.peers.end() || !i->second.up)
      return false;
  }
  return st.settled_once = true;
}

namespace {

// The copies being filled are marked on disk, <data-dir>/filling/<p>, so
// that a node restarted meanwhile still treats its copy as filling: an
// empty or half-filled copy that led, or promised a take-over round, could
// make a round miss acknowledged writes (docs/REPLICATION.md, "Filling
// copies").
std::filesystem::path filling_mark(mem_self self, std::uint32_t p) {
  return std::filesystem::path{self->state.cfg.root} / "filling" / std::to_string(p);
}

void clear_filling(mem_self self, std::uint32_t p) {
  self->state.filling.erase(p);
  std::error_code ec;
  std::filesystem::remove(filling_mark(self, p), ec);
}

// Whether some node other than `who` that is up holds a current copy of
// partition p (n_val > 1).
bool current_copy_elsewhere(mem_self self, std::uint32_t p, const node_id& who) {
  for (const auto& node : copy_nodes(*self->state.ring, p))
    if (node != who && current_copy_on(self, p, node))
      return true;
  return false;
}

// Whether a peer that is up serves an owner's store of partition p (it
// hands it to p's owner when the owner is another node).
bool owner_store_elsewhere(mem_self self, std::uint32_t p) {
  for (const auto& [id, pe] : self->state.peers)
    if (pe.up && p < pe.parts.size() && pe.parts[p])
      return true;
  return false;
}

} // namespace

bool current_copy_on(mem_self self, std::uint32_t p, const node_id& node) {
  auto& st = self->state;
  if (node == self_id(self)) {
    const bool owned = st.local[p] && st.closed.count(p) == 0;
    const bool copy = p < st.copies.size() && st.copies[p];
    return (owned || copy) && st.stale.count(p) == 0 && st.filling.count(p) == 0;
  }
  auto i = st.peers.find(node);
  if (i == st.peers.end() || !i->second.up)
    return false;
  const auto& pe = i->second;
  const bool owned = p < pe.parts.size() && pe.parts[p];
  const bool copy = p < pe.copies.size() && pe.copies[p];
  return (owned || copy) && pe.stale.count(p) == 0 && pe.filling.count(p) == 0;
}

void replicated_routes(mem_self self) {
  auto& st = self->state;
  std::vector<route> table(st.cfg.q);
  const bool configure = settled(self);
  for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
    // A copy retired here (a view whose copy set did not name this node)
    // that a newer view names again has missed the writes since: it is
    // filled first, as a copy made empty is, before its promise counts in
    // a take-over round. Counted as current, it completed rounds on its
    // own with a lagging copy, and the copy holding the last acknowledged
    // writes was found "diverged" and overwritten by a full copy: a leave
    // under writes lost acknowledged increments (stop 32; the copy sets
    // before and after the change did not share a write quorum,
    // docs/REPLICATION.md "Not done yet").
    if (auto r = st.retired.find(p);
        r != st.retired.end() && in_copy_set(*st.ring, p, self_id(self))) {
      st.retired.erase(r);
      set_filling(self, p);
      log(log_level::info, "partition ", p, ": its copy set names this node again; this "
                           "node's retired copy is filled before it counts as current");
    }
    std::vector<copy_view> copies;
    {
      for (const auto& node : copy_nodes(*st.ring, p)) {
        copy_view v;
        v.node = node;
        if (node == self_id(self)) {
          const bool owned = st.local[p] && st.closed.count(p) == 0;
          v.handle = owned ? st.local[p] : st.copies[p];
          v.stale = st.stale.count(p) != 0;
          v.filling = st.filling.count(p) != 0;
        } else if (auto i = st.peers.find(node); i != st.peers.end() && i->second.up) {
          const auto& pe = i->second;
          const bool owned = p < pe.parts.size() && pe.parts[p];
          if (owned)
            v.handle = pe.parts[p];
          else if (p < pe.copies.size())
            v.handle = pe.copies[p];
          v.stale = pe.stale.count(p) != 0;
          v.filling = pe.filling.count(p) != 0;
        }
        copies.push_back(std::move(v));
      }
    }
    auto plan = plan_partition(p, copies, self_id(self));
    table[p] = std::move(plan.where);
    if (!configure || !plan.mine)
      continue;
    const auto& mine = *plan.mine;
    auto& handle = st.local[p] && st.closed.count(p) == 0 ? st.local[p] : st.copies[p];
    // A new actor for this node's copy (reopened, received, replaced) is
    // configured too, even when the plan did not change, and so is every
    // copy when the ring's epoch moves: its rounds and batches carry the
    // epoch of its node's view (docs/REPLICATION.md, "Rounds across two
    // copy sets").
    const auto ring_epoch = view_rank(st.ring->owners()); // its rank: views of one epoch differ
    // The copies of p on the other nodes that are up, set or not (a joint
    // round asks the ones its new set drops), and the removed members.
    std::vector<node_id> removed, other_nodes;
    std::vector<caf::actor> other_handles;
    for (const auto& [id, m] : st.ring->members())
      if (m.status == member_status::removed)
        removed.push_back(id);
    std::string others_key;
    for (const auto& [id, pe] : st.peers) {
      if (!pe.up)
        continue;
      // Null: the node is up and holds no copy of p (a joint round counts
      // it as gone).
      caf::actor h = p < pe.parts.size() && pe.parts[p] ? pe.parts[p]
                     : p < pe.copies.size()             ? pe.copies[p]
                                                        : caf::actor{};
      others_key += id + "=" + std::to_string(h ? h.id() : 0) + ",";
      other_nodes.push_back(id);
      other_handles.push_back(std::move(h));
    }
    auto key = mine.key() + "|" + std::to_string(handle ? handle.id() : 0) + "|"
               + std::to_string(ring_epoch) + "|" + std::to_string(removed.size()) + "|"
               + others_key;
    auto& last = st.configured[p];
    if (last == key)
      continue;
    last = key;
    self->send(handle, r_node_atom::value, self_id(self));
    self->send(handle, r_others_atom::value, std::move(removed), std::move(other_nodes),
               std::move(other_handles));
    self->send(handle, r_config_atom::value, static_cast<std::uint8_t>(mine.role),
               mine.primary, mine.peers, mine.handles, mine.w, mine.filling, ring_epoch);
  }
  st.routes->store(std::move(table));
}

void ensure_copies(mem_self self) {
  auto& st = self->state;
  if (!replicated(self) || !st.cfg.open_copy)
    return;
  st.copies.resize(st.cfg.q);
  const auto& owners = st.ring->owners().owners;
  for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
    // A copy in replicas/<p> of a partition this node now owns (it was
    // re-created or kept there after a removal, docs/CLUSTER.md): reopened
    // at a restart, where only partitions/<p> folders are opened.
    const bool owned_copy_on_disk = owners[p] == self_id(self) && !st.local[p] && !st.copies[p]
                                    && st.cfg.has_copy && st.cfg.has_copy(p);
    // A partition this node now owns and holds nothing of, while no node
    // holds an owner's store of it to hand off: its previous owner served
    // it from a copy (one re-created after a removal, docs/CLUSTER.md),
    // and copies are not handed off. The new owner opens a copy of its own
    // (filled from the others) instead of staying one copy short. A store
    // that turns up later is not received beside it: its sender keeps it
    // as a copy or sets it aside ("One copy per node").
    const bool owner_with_nothing = owners[p] == self_id(self) && !st.local[p] && !st.copies[p]
                                    && st.unopened.count(p) == 0 && st.incoming.count(p) == 0
                                    && settled(self) && !owner_store_elsewhere(self, p);
    const bool open_here = owned_copy_on_disk || owner_with_nothing;
    if (!open_here && (st.copies[p] || owners[p] == self_id(self) || st.local[p]))
      continue;
    if (!open_here && !in_copy_set(*st.ring, p, self_id(self)))
      continue;
    // A copy made here now is empty: while a current copy exists
    // elsewhere it follows the primary and may not lead until it has
    // caught up (check_filling), so "n_val copies" counts only filled ones.
    // An owner's store of p unopened here (a handoff cut short by a crash,
    // `unopened`) proves that p holds data somewhere, even at a start,
    // before any peer is heard from and a current copy elsewhere can be
    // seen: the empty copy is marked filling then too (it was counted as
    // current, docs/REPLICATION.md "One copy per node").
    const bool made_now = st.cfg.has_copy && !st.cfg.has_copy(p);
    const bool data_elsewhere = st.unopened.count(p) != 0
                                || current_copy_elsewhere(self, p, self_id(self));
    auto h = st.cfg.open_copy(p);
    if (!h) {
      log(log_level::error, "partition ", p, ": cannot open this node's copy: ",
          h.err().to_string());
      continue;
    }
    st.copies[p] = *h;
    if (made_now && data_elsewhere)
      set_filling(self, p);
  }
}

bool recreate_removed(mem_self self) {
  auto& st = self->state;
  std::vector<std::pair<std::uint32_t, removed_copy>> todo;
  for (const auto& [p, r] : st.ring->removals())
    if (!r.recreated && p < st.cfg.q && st.ring->owners().owners[p] == self_id(self))
      todo.emplace_back(p, r);
  bool marked = false;
  for (const auto& [p, r] : todo) {
    const bool here = st.local[p] || st.unopened.count(p) != 0
                      || (p < st.copies.size() && st.copies[p]);
    if (!here) {
      expected<caf::actor> h = make_error(errc::unavailable, "this node cannot create partitions");
      if (!replicated(self)) {
        if (st.cfg.create_partition)
          h = st.cfg.create_partition(p);
      } else if (st.cfg.open_copy) {
        h = st.cfg.open_copy(p);
      }
      if (!h) {
        log(log_level::error, "partition ", p, ": cannot re-create it after the removal of ",
            r.from, ": ", h.err().to_string(), " (retried on the next change)");
        continue;
      }
      if (replicated(self)) {
        st.copies.resize(st.cfg.q);
        st.copies[p] = *h;
        if (!r.only_copy)
          set_filling(self, p);
      } else {
        st.local[p] = *h;
      }
      if (r.only_copy)
        log(log_level::error, "partition ", p, ": its only copy was on node ", r.from,
            ", removed with --force: its data is LOST; re-created empty on this node");
      else
        log(log_level::info, "partition ", p, ": its copy on removed node ", r.from,
            " is re-created on this node from the surviving copies");
    }
    st.ring->mark_recreated(p);
    marked = true;
  }
  return marked;
}

void set_filling(mem_self self, std::uint32_t p) {
  self->state.filling.insert(p);
  std::error_code ec;
  std::filesystem::create_directories(filling_mark(self, p).parent_path(), ec);
  std::ofstream{filling_mark(self, p)};
  if (!std::filesystem::exists(filling_mark(self, p), ec))
    log(log_level::warn, "partition ", p, ": cannot mark this node's copy as filling in ",
        filling_mark(self, p).string(), " (a restart would forget it)");
}

void load_filling(mem_self self) {
  std::error_code ec;
  auto dir = std::filesystem::path{self->state.cfg.root} / "filling";
  for (auto it = std::filesystem::directory_iterator{dir, ec};
       !ec && it != std::filesystem::directory_iterator{}; it.increment(ec)) {
    const auto name = it->path().filename().string();
    char* end = nullptr;
    const auto p = std::strtoul(name.c_str(), &end, 10);
    if (!name.empty() && *end == '\0' && p < self->state.cfg.q)
      self->state.filling.insert(static_cast<std::uint32_t>(p));
  }
}

void check_filling(mem_self self, std::function<void()> caught_up) {
  auto& st = self->state;
  if (st.filling.empty())
    return;
  auto table = st.routes->load();
  for (auto p : std::vector<std::uint32_t>(st.filling.begin(), st.filling.end())) {
    const bool owned = st.local[p] && st.closed.count(p) == 0;
    if (!owned && (p >= st.copies.size() || !st.copies[p])) {
      clear_filling(self, p); // no longer a copy on this node
      continue;
    }
    const auto& primary = (*table)[p];
    if (st.checking.count(p) != 0 || !primary.handle || primary.node == self_id(self))
      continue;
    st.checking.insert(p);
    auto mine = owned ? st.local[p] : st.copies[p];
    auto from = primary.node;
    self->request(primary.handle, st.cfg.request_timeout, r_end_atom::value)
      .then(
        [self, p, mine, from, caught_up](std::uint64_t target, std::uint8_t, std::uint64_t,
                                         std::uint64_t) {
          self->request(mine, self->state.cfg.request_timeout, r_end_atom::value)
            .then(
              [self, p, target, from, caught_up](std::uint64_t end, std::uint8_t,
                                                 std::uint64_t, std::uint64_t) {
                auto& st = self->state;
                st.checking.erase(p);
                if (end < target || st.filling.count(p) == 0)
                  return;
                clear_filling(self, p);
                log(log_level::info, "partition ", p, ": this node's new copy has caught up "
                    "with ", from, " (journal end ", end, "); it counts as a current copy");
                caught_up();
              },
              [self, p](caf::error&) { self->state.checking.erase(p); });
        },
        [self, p](caf::error&) { self->state.checking.erase(p); });
  }
}

std::map<std::uint32_t, bool> copies_on(mem_self self, const node_id& who) {
  auto& st = self->state;
  const auto& owners = st.ring->owners().owners;
  std::map<std::uint32_t, bool> out;
  auto pe = st.peers.find(who);
  for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
    if (replicated(self)) {
      auto nodes = copy_nodes(*st.ring, p);
      if (std::find(nodes.begin(), nodes.end(), who) != nodes.end())
        out[p] = !current_copy_elsewhere(self, p, who);
      continue;
    }
    const bool held = owners[p] == who
                      || (pe != st.peers.end() && pe->second.served_when_down.count(p) != 0);
    if (!held)
      continue;
    bool elsewhere = st.local[p] || st.unopened.count(p) != 0;
    for (const auto& [id, other] : st.peers)
      if (id != who && other.up && p < other.parts.size() && other.parts[p])
        elsewhere = true;
    if (!elsewhere)
      out[p] = true;
  }
  return out;
}

} // namespace tally
