#include "actors/copy_retirement.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "actors/atoms.hpp"
#include "actors/copy_plan.hpp"
#include "actors/partition_replication.hpp"
#include "common/log.hpp"
#include "replication/placement.hpp"

namespace tally {

namespace {

bool named_in_copy_set(mem_self self, std::uint32_t p) {
  return in_copy_set(*self->state.ring, p, self_id(self));
}

// A copy of p here that is not the owner's: a replica copy
// (<data-dir>/replicas/<p>).
bool holds_replica_copy(mem_self self, std::uint32_t p) {
  auto& st = self->state;
  const bool owned = p < st.local.size() && st.local[p] && st.closed.count(p) == 0;
  return !owned && p < st.copies.size() && st.copies[p];
}

// Every node of p's copy set holds a current copy of it (this one is not
// among them).
bool copy_set_complete(mem_self self, std::uint32_t p) {
  for (const auto& node : copy_nodes(*self->state.ring, p))
    if (!current_copy_on(self, p, node))
      return false;
  return true;
}

// Stops the retired copy of p and deletes its folder, or moves it aside
// (`keep_aside`, with why).
void drop(mem_self self, std::uint32_t p, bool keep_aside, const std::string& why) {
  auto& st = self->state;
  caf::anon_send_exit(st.copies[p], caf::exit_reason::user_shutdown);
  st.copies[p] = nullptr;
  st.retired.erase(p);
  st.configured.erase(p);
  st.stale.erase(p);
  if (!st.cfg.drop_copy)
    return;
  auto where = st.cfg.drop_copy(p, keep_aside);
  if (!where)
    log(log_level::error, "partition ", p, ": cannot remove this node's retired copy: ",
        where.err().to_string());
  else if (keep_aside)
    log(log_level::warn, "partition ", p, ": this node's retired copy ", why,
        "; kept in ", *where, " (the partition has its ",
        copy_nodes(*st.ring, p).size(), " copies elsewhere)");
  else
    log(log_level::info, "partition ", p, ": this node's retired copy is deleted (", why,
        ")");
}

} // namespace

void retire_unneeded_copies(mem_self self) {
  auto& st = self->state;
  for (std::uint32_t p = 0; p < st.cfg.q && p < st.copies.size(); ++p) {
    if (!holds_replica_copy(self, p) || named_in_copy_set(self, p)) {
      st.retired.erase(p);
      continue;
    }
    if (st.retired.count(p) != 0)
      continue;
    st.retired.emplace(p, std::chrono::steady_clock::now());
    // A replica of nobody, with no peers: it refuses every batch (none
    // comes from its primary) and every take-over round (no peer of its
    // set asks), and serves nothing.
    const auto majority = majority_of(static_cast<std::uint32_t>(
      std::max<std::size_t>(1, copy_nodes(*st.ring, p).size())));
    st.configured[p] = "retired|" + std::to_string(st.copies[p].id());
    self->send(st.copies[p], r_config_atom::value,
               static_cast<std::uint8_t>(copy_role::replica), node_id{},
               std::vector<node_id>{}, std::vector<caf::actor>{}, majority, false,
               view_rank(st.ring->owners()));
    log(log_level::info, "partition ", p, ": its copy set no longer names this node; "
                         "this node's copy is retired (deleted once the ",
        copy_nodes(*st.ring, p).size(), " copies of its set are current)");
  }
}

void open_leftover_copies(mem_self self) {
  auto& st = self->state;
  if (!st.cfg.has_copy || !st.cfg.open_copy)
    return;
  st.copies.resize(st.cfg.q);
  for (std::uint32_t p = 0; p < st.cfg.q; ++p) {
    const bool owned = p < st.local.size() && st.local[p];
    if (owned || st.copies[p] || st.unopened.count(p) != 0 || named_in_copy_set(self, p)
        || !st.cfg.has_copy(p))
      continue;
    auto h = st.cfg.open_copy(p);
    if (!h) {
      log(log_level::error, "partition ", p, ": cannot open this node's leftover copy: ",
          h.err().to_string());
      continue;
    }
    st.copies[p] = *h;
  }
}

void check_retired(mem_self self, std::function<void()> dropped) {
  auto& st = self->state;
  if (st.retired.empty())
    return;
  auto table = st.routes->load();
  const auto now = std::chrono::steady_clock::now();
  for (auto [p, since] : std::map<std::uint32_t, std::chrono::steady_clock::time_point>(
         st.retired)) {
    if (st.dropping.count(p) != 0 || now - since < retired_grace
        || !copy_set_complete(self, p))
      continue;
    const auto& primary = (*table)[p];
    if (!primary.handle || primary.node == self_id(self))
      continue;
    st.dropping.insert(p);
    auto mine = st.copies[p];
    auto at_primary = primary.handle;
    auto still_retired = [self, p, mine] {
      auto& s = self->state;
      return s.retired.count(p) != 0 && p < s.copies.size() && s.copies[p] == mine;
    };
    self->request(mine, st.cfg.request_timeout, r_tail_atom::value)
      .then(
        [self, p, at_primary, still_retired, dropped](std::uint64_t end, std::uint64_t o,
                                                      std::uint64_t q, std::uint64_t term_n,
                                                      node_id& term_by) {
          auto& st = self->state;
          if (!still_retired()) {
            st.dropping.erase(p);
            return;
          }
          if (end <= 1) { // an empty journal: nothing to lose
            st.dropping.erase(p);
            drop(self, p, false, "it was empty");
            dropped();
            return;
          }
          self->request(at_primary, st.cfg.request_timeout, r_holds_atom::value, end - 1, o, q,
                        term_n, term_by)
            .then(
              [self, p, end, still_retired, dropped](std::int8_t held) {
                self->state.dropping.erase(p);
                if (!still_retired() || !copy_set_complete(self, p))
                  return;
                if (held == 1)
                  drop(self, p, false,
                       "the primary's journal holds its last record, LSN "
                         + std::to_string(end - 1));
                else
                  drop(self, p, true,
                       held == 0 ? "holds records the primary's journal does not"
                                 : "could not be compared with the primary's journal "
                                   "(folded there)");
                dropped();
              },
              [self, p](caf::error&) { self->state.dropping.erase(p); });
        },
        [self, p](caf::error&) { self->state.dropping.erase(p); });
  }
}

} // namespace tally
