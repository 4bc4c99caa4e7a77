#include "ring/claim.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "ring/partition.hpp"

namespace tally {

namespace {

// Marks a partition whose current owner is not a member: it must move.
constexpr int no_owner = -1;

// Work (candidate swaps weighed plus search steps) one claim may spend on
// removing violations after the first fill, per partition and at least.
// Budgets from 2^20 to 2^24 gave the same tables on the rings docs/RING.md
// measures; when it runs out the claim takes the canonical table, which is
// always correct, so the budget bounds the claimant's time, not the
// table's validity.
constexpr long repair_work_per_partition = 1L << 11;
constexpr long min_repair_work = 1L << 20;

// Orphans times members above which fill_orphans leaves the orphans to the
// plain fill: its scan is quadratic in the orphans.
constexpr std::size_t orphan_scan_limit = std::size_t{1} << 14;

// Entries (ring size times members) up to which the fill keeps one distance
// array per member: 2^24 entries are 64 MiB, reached only by rings of 2^16
// partitions with 256 members.
constexpr std::size_t distance_cache_limit = std::size_t{1} << 24;

// Steps of one segment search (phase 3): a narrow segment with no solution
// is abandoned quickly for a wider one.
constexpr long segment_search_budget = 200'000;

// Partitions a segment search may trade with the rest of the ring. Each
// costs one move outside the segment; two cover a surplus of one member and
// a deficit of another on each side of a violation.
constexpr int max_segment_surplus = 2;

// Rotations of the canonical table the fallback tries, as work: about
// rotation_work / Q rotations (at most 256, at least 1). Every rotation is
// valid; trying several lets the table line up with the current owners.
constexpr std::uint64_t rotation_work = std::uint64_t{1} << 22;
constexpr std::uint32_t max_rotations = 256;

// The table under construction: member indices, no_owner for orphans.
struct table {
  std::vector<int> own;
  std::uint32_t n = 1; // window size
  int nodes = 0;       // members, indexed 0 .. nodes-1

  std::uint32_t size() const { return static_cast<std::uint32_t>(own.size()); }

  // Violating pairs (p, p+d) and (p-d, p), 1 <= d < n, whose other end is
  // owned by k: what p would take part in if k owned it.
  int near(std::uint32_t p, int k) const {
    if (k == no_owner)
      return 0;
    const auto q = size();
    int c = 0;
    for (std::uint32_t d = 1; d < n; ++d) {
      c += own[(p + d) % q] == k;
      c += own[(p + q - d) % q] == k;
    }
    return c;
  }

  // Pairs (i, d) with {i, i+d} == {a, b} and 1 <= d < n.
  int pairs_between(std::uint32_t a, std::uint32_t b) const {
    const auto q = size();
    const auto f = (b + q - a) % q;
    return static_cast<int>(f >= 1 && f < n)
           + static_cast<int>(q - f >= 1 && q - f < n);
  }

  // Violating pairs that touch a or b (each counted once).
  int touching(std::uint32_t a, std::uint32_t b) const {
    int t = near(a, own[a]) + near(b, own[b]);
    if (own[a] == own[b] && own[a] != no_owner)
      t -= pairs_between(a, b);
    return t;
  }

  // Violating pairs (i, d), 1 <= d < n, own[i] == own[i+d].
  long violations() const {
    long sum = 0;
    for (std::uint32_t p = 0; p < size(); ++p)
      sum += near(p, own[p]);
    return sum / 2; // each pair was seen from both ends
  }
};

std::size_t moved_count(const std::vector<int>& a, const std::vector<int>& b) {
  std::size_t n = 0;
  for (std::size_t p = 0; p < a.size(); ++p)
    n += a[p] != b[p];
  return n;
}

// Cyclic distance from every position to the nearest one owned by k
// (size() when k owns nothing).
std::vector<std::uint32_t> distance_to(const table& t, int k) {
  const auto q = t.size();
  std::vector<std::uint32_t> dist(q, q);
  long last = -1;
  for (std::uint32_t i = 0; i < 2 * q; ++i) {
    if (t.own[i % q] == k)
      last = i;
    if (last >= 0)
      dist[i % q] = std::min(dist[i % q], static_cast<std::uint32_t>(i - last));
  }
  last = -1;
  for (std::uint32_t i = 2 * q; i-- > 0;) {
    if (t.own[i % q] == k)
      last = i;
    if (last >= 0)
      dist[i % q] = std::min(dist[i % q], static_cast<std::uint32_t>(last - i));
  }
  return dist;
}

// Balanced targets: floor(Q/N) each, and the Q mod N extra partitions go to
// the members that hold the most now (fewest moves), ties by index.
std::vector<int> balanced_targets(const std::vector<int>& count, std::uint32_t q) {
  const auto nodes = static_cast<std::uint32_t>(count.size());
  std::vector<int> order(nodes);
  for (std::uint32_t k = 0; k < nodes; ++k)
    order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return count[a] > count[b]; });
  std::vector<int> target(nodes, static_cast<int>(q / nodes));
  for (std::uint32_t i = 0; i < q % nodes; ++i)
    ++target[order[i]];
  return target;
}

// Phase 1c (fill): every member below its target takes partitions from
// non-members and over-full members, one at a time, the neediest member
// first. Each pick is one move, so phase 1 moves exactly what balance
// requires. A pick prefers the fewest violations, then a partition at least
// Q / target away from the member's other partitions when `capped`
// (spacing beyond that buys nothing, and the cap turns a new member's picks
// into an even sweep), else as far as possible; ties go to the first
// partition after the previous pick. The scan stops at a pick no other can
// beat (see `ideal`), so a join into a distinct or a single-owner ring costs
// O(Q * n), not O(Q^2 * n / N).
void fill_deficits(table& t, std::vector<int>& count, const std::vector<int>& target,
                   bool capped) {
  const auto q = t.size();
  long violations = t.violations();
  std::uint32_t cursor = 0;
  // Distances per member below target, kept up to date as it gains
  // partitions (such members never lose one here). Within the memory bound
  // every member keeps its own; beyond it only the last one picked.
  const bool keep_all = static_cast<std::size_t>(q) * count.size() <= distance_cache_limit;
  std::vector<std::vector<std::uint32_t>> cache(keep_all ? count.size() : 1);
  int cached = no_owner; // whose distances cache[0] holds when !keep_all
  for (;;) {
    int d = no_owner;
    int most = 0;
    for (std::size_t k = 0; k < count.size(); ++k)
      if (target[k] - count[k] > most) {
        most = target[k] - count[k];
        d = static_cast<int>(k);
      }
    if (d == no_owner)
      return;
    auto& dist = cache[keep_all ? static_cast<std::size_t>(d) : 0];
    if (keep_all ? dist.empty() : cached != d) {
      dist = distance_to(t, d);
      cached = d;
    }
    const auto spacing = capped ? static_cast<long>(q / static_cast<std::uint32_t>(target[d]))
                                : static_cast<long>(q);
    // No pick beats this key: it removes every pair its old owner had
    // (2(n-1) at most; none exist while the table has no violation).
    const std::tuple<int, long> ideal{violations == 0 ? 0 : -2 * static_cast<int>(t.n - 1),
                                      -spacing};
    std::uint32_t best = q;
    std::tuple<int, long> best_key{0, 0};
    for (std::uint32_t i = 0; i < q; ++i) {
      const auto p = (cursor + i) % q;
      const int k = t.own[p];
      if (k != no_owner && count[k] <= target[k])
        continue;
      const std::tuple<int, long> key{t.near(p, d) - t.near(p, k),
                                      -std::min(static_cast<long>(dist[p]), spacing)};
      if (best == q || key < best_key) {
        best = p;
        best_key = key;
        if (key == ideal)
          break;
      }
    }
    // Deficits and surpluses balance (the targets sum to Q), so a candidate
    // exists while some member is below its target.
    const int k = t.own[best];
    if (k != no_owner)
      --count[k];
    t.own[best] = d;
    ++count[d];
    violations += std::get<0>(best_key);
    // d gained `best`: distances shrink only around it.
    dist[best] = 0;
    for (std::uint32_t i = 1; i < q && dist[(best + i) % q] > i; ++i)
      dist[(best + i) % q] = i;
    for (std::uint32_t i = 1; i < q && dist[(best + q - i) % q] > i; ++i)
      dist[(best + q - i) % q] = i;
    cursor = (best + 1) % q;
  }
}

// Phase 1a (matching): when the orphans are pairwise at least n apart (a
// leaver's partitions always are), filling one never constrains another,
// so filling as many as possible without a violation is a bipartite
// b-matching: orphan -> member below target, an edge when the member fits,
// the member's capacity its deficit. Augmenting paths (Kuhn) find a
// maximum matching; orphans left over go to fill_orphans. Returns false,
// changing nothing, when the orphans are closer or too many to match.
bool match_orphans(table& t, std::vector<int>& count, const std::vector<int>& target) {
  const auto q = t.size();
  std::vector<std::uint32_t> orphans;
  for (std::uint32_t p = 0; p < q; ++p)
    if (t.own[p] == no_owner)
      orphans.push_back(p);
  if (orphans.empty()
      || orphans.size() * static_cast<std::size_t>(t.nodes) > orphan_scan_limit)
    return false;
  for (std::size_t i = 0; i + 1 < orphans.size(); ++i)
    if (orphans[i + 1] - orphans[i] < t.n)
      return false;
  if (orphans.size() > 1 && orphans.front() + q - orphans.back() < t.n)
    return false;

  std::vector<std::vector<int>> fits(orphans.size());
  for (std::size_t i = 0; i < orphans.size(); ++i)
    for (int k = 0; k < t.nodes; ++k)
      if (count[k] < target[k] && t.near(orphans[i], k) == 0)
        fits[i].push_back(k);
  std::vector<int> match(orphans.size(), no_owner);
  std::vector<std::vector<std::size_t>> holders(static_cast<std::size_t>(t.nodes));
  std::vector<bool> seen;
  auto augment = [&](auto& self, std::size_t i) -> bool {
    for (int k : fits[i]) {
      if (seen[k])
        continue;
      seen[k] = true;
      auto& held = holders[k];
      if (static_cast<int>(held.size()) < target[k] - count[k]) {
        held.push_back(i);
        match[i] = k;
        return true;
      }
      for (auto& j : held)
        if (self(self, j)) { // j moved to another member: i takes its place
          j = i;
          match[i] = k;
          return true;
        }
    }
    return false;
  };
  for (std::size_t i = 0; i < orphans.size(); ++i) {
    seen.assign(static_cast<std::size_t>(t.nodes), false);
    augment(augment, i);
  }
  for (std::size_t i = 0; i < orphans.size(); ++i)
    if (match[i] != no_owner) {
      t.own[orphans[i]] = match[i];
      ++count[match[i]];
    }
  return true;
}

// Phase 1b (orphans): partitions of non-members go first, the most
// constrained first: the orphan with the fewest members below target that
// fit without a violation takes the neediest of them (ties by index). A
// member that fits nowhere is left to the repair. Bounded to rings where the
// quadratic scan is cheap; larger ones go straight to fill_deficits.
void fill_orphans(table& t, std::vector<int>& count, const std::vector<int>& target) {
  const auto q = t.size();
  std::vector<std::uint32_t> orphans;
  for (std::uint32_t p = 0; p < q; ++p)
    if (t.own[p] == no_owner)
      orphans.push_back(p);
  if (orphans.size() * static_cast<std::size_t>(t.nodes) > orphan_scan_limit)
    return;
  while (!orphans.empty()) {
    std::size_t pick = orphans.size();
    int pick_member = no_owner;
    std::tuple<int, int, int> pick_key{}; // (options, near, -deficit)
    for (std::size_t i = 0; i < orphans.size(); ++i) {
      const auto p = orphans[i];
      int options = 0;
      int member = no_owner;
      std::tuple<int, int> member_key{}; // (near, -deficit)
      for (int k = 0; k < t.nodes; ++k) {
        if (count[k] >= target[k])
          continue;
        const int near = t.near(p, k);
        options += near == 0;
        const std::tuple<int, int> key{near, count[k] - target[k]};
        if (member == no_owner || key < member_key) {
          member = k;
          member_key = key;
        }
      }
      if (member == no_owner)
        return; // no deficit left: fill_deficits hands out the rest
      const std::tuple<int, int, int> key{options, std::get<0>(member_key),
                                          std::get<1>(member_key)};
      if (pick == orphans.size() || key < pick_key) {
        pick = i;
        pick_member = member;
        pick_key = key;
      }
    }
    t.own[orphans[pick]] = pick_member;
    ++count[pick_member];
    orphans.erase(orphans.begin() + static_cast<long>(pick));
  }
}

// Phase 2 (repair): swaps the owners of two partitions while that removes
// violating pairs; counts stay balanced. Sweeps the ring; for each
// partition in a violation takes its best partner: most violations removed,
// then fewest partitions moved, then lowest index. Without `extra_moves`,
// only swaps that move no more partitions than before (best effort where
// distinctness is impossible). Stops after a sweep without a swap, when
// `work` runs out, or once more than `max_moved` partitions have moved.
void repair(table& t, const std::vector<int>& orig, bool extra_moves, long& work,
            std::size_t max_moved) {
  const auto q = t.size();
  auto moved = [&](std::uint32_t p) { return static_cast<int>(t.own[p] != orig[p]); };
  std::size_t moved_now = moved_count(t.own, orig);
  bool progress = true;
  while (progress && work > 0 && moved_now <= max_moved) {
    progress = false;
    std::vector<std::uint32_t> moved_list;
    for (std::uint32_t p = 0; p < q; ++p)
      if (moved(p))
        moved_list.push_back(p);
    for (std::uint32_t a = 0; a < q && work > 0 && moved_now <= max_moved; ++a) {
      if (t.near(a, t.own[a]) == 0)
        continue;
      bool found = false;
      std::tuple<int, int, std::uint32_t> best{};
      auto consider = [&](std::uint32_t b) {
        --work;
        if (t.own[a] == t.own[b])
          return;
        const int before = t.touching(a, b);
        const int moves_before = moved(a) + moved(b);
        std::swap(t.own[a], t.own[b]);
        const int dv = t.touching(a, b) - before;
        const int dm = moved(a) + moved(b) - moves_before;
        std::swap(t.own[a], t.own[b]);
        if (dv >= 0 || (!extra_moves && dm > 0))
          return;
        const std::tuple<int, int, std::uint32_t> key{dm, dv, b};
        if (!found || key < best) {
          best = key;
          found = true;
        }
      };
      // A free swap (no extra move) needs one side already moved.
      if (extra_moves || moved(a)) {
        for (std::uint32_t b = 0; b < q; ++b)
          consider(b);
      } else {
        for (auto b : moved_list)
          consider(b);
      }
      if (!found)
        continue;
      const auto b = std::get<2>(best);
      std::swap(t.own[a], t.own[b]);
      moved_now = static_cast<std::size_t>(static_cast<long>(moved_now) + std::get<1>(best));
      progress = true;
    }
  }
}

// Phase 3 (segments): re-solves the segment [start, start + len) (cyclic)
// by search. Any nearby member may own a segment partition provided no
// violating pair touches it. When the segment ends with up to `max_surplus`
// more partitions of some members (and as many fewer of others) than
// before, as many transfers far outside the segment give one partition of a
// member in surplus to a member in deficit, so counts stay balanced.
// Minimizes partitions moved against `orig`: depth-first, the original
// owner tried first, pruned by the best solution so far and cut after
// `budget` steps (keeping the best found). Returns false and leaves `t`
// unchanged when it finds no solution.
bool resolve_segment(table& t, const std::vector<int>& orig, std::uint32_t start,
                     std::uint32_t len, int max_surplus, long& budget) {
  constexpr int unassigned = -2; // never equal to a member index
  const auto q = t.size();
  std::vector<std::uint32_t> pos(len);
  std::vector<int> saved(len);
  std::vector<int> delta(t.nodes, 0); // placed minus originally in the segment
  for (std::uint32_t i = 0; i < len; ++i) {
    pos[i] = (start + i) % q;
    saved[i] = t.own[pos[i]];
    --delta[saved[i]];
  }
  // Members worth trying: those owning a partition in or next to the segment.
  std::vector<int> symbols;
  for (std::uint32_t i = 0; i < std::min(q, len + 2 * t.n); ++i)
    symbols.push_back(t.own[(start + q - t.n + i) % q]);
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  // Partitions a transfer may use: at least n away from the segment, so
  // the segment's assignment never changes whether a transfer fits.
  std::vector<bool> far(q, true);
  for (std::uint32_t i = 0; i < std::min(q, len + 2 * (t.n - 1)); ++i)
    far[(start + q - (t.n - 1) + i) % q] = false;
  auto moved = [&](std::uint32_t p) { return static_cast<int>(t.own[p] != orig[p]); };
  // Cheapest transfers of one partition from member X to member Y, by cost.
  std::map<std::pair<int, int>, std::vector<std::pair<int, std::uint32_t>>> offers;
  auto offers_for = [&](int from, int to) -> const auto& {
    auto [it, fresh] = offers.try_emplace({from, to});
    if (fresh) {
      for (std::uint32_t r = 0; r < q; ++r)
        if (far[r] && t.own[r] == from && t.near(r, to) == 0)
          it->second.emplace_back(static_cast<int>(to != orig[r]) - moved(r), r);
      std::sort(it->second.begin(), it->second.end());
    }
    return it->second;
  };
  for (auto p : pos)
    t.own[p] = unassigned;

  struct transfer {
    std::uint32_t partition;
    int from;
    int to;
  };
  std::vector<int> current(len);
  std::vector<int> best;
  std::vector<transfer> transfers, best_transfers;
  int best_cost = std::numeric_limits<int>::max();

  // At a full assignment: pair each surplus unit with a deficit unit and
  // take the cheapest transfer that still fits.
  auto finish = [&](int cost) {
    transfers.clear();
    std::vector<int> give, take;
    for (int k = 0; k < t.nodes; ++k) {
      for (int u = 0; u < delta[k]; ++u)
        give.push_back(k);
      for (int u = 0; u < -delta[k]; ++u)
        take.push_back(k);
    }
    bool ok = true;
    for (std::size_t u = 0; u < give.size() && ok; ++u) {
      ok = false;
      for (const auto& [c, r] : offers_for(give[u], take[u])) {
        --budget;
        if (t.own[r] != give[u] || t.near(r, take[u]) > 0)
          continue; // taken or blocked by an earlier transfer
        transfers.push_back({r, give[u], take[u]});
        t.own[r] = take[u];
        cost += c;
        ok = true;
        break;
      }
    }
    if (ok && cost < best_cost) {
      best = current;
      best_transfers = transfers;
      best_cost = cost;
    }
    for (auto it = transfers.rbegin(); it != transfers.rend(); ++it)
      t.own[it->partition] = it->from;
  };

  auto dfs = [&](auto& self, std::uint32_t i, int cost, int surplus) -> void {
    if (cost >= best_cost || budget-- <= 0)
      return;
    if (i == len) {
      finish(cost);
      return;
    }
    const auto x = pos[i];
    auto place = [&](int k) {
      if (t.near(x, k) > 0)
        return;
      const int more = delta[k] >= 0 ? 1 : 0;
      if (surplus + more > max_surplus)
        return;
      ++delta[k];
      t.own[x] = k;
      current[i] = k;
      self(self, i + 1, cost + static_cast<int>(k != orig[x]), surplus + more);
      t.own[x] = unassigned;
      --delta[k];
    };
    if (orig[x] != no_owner)
      place(orig[x]);
    for (int k : symbols)
      if (k != orig[x])
        place(k);
  };
  dfs(dfs, 0, 0, 0);
  const auto& result = best.empty() ? saved : best;
  for (std::uint32_t i = 0; i < len; ++i)
    t.own[pos[i]] = result[i];
  if (best.empty())
    return false;
  for (const auto& tr : best_transfers)
    t.own[tr.partition] = tr.to;
  return true;
}

// Runs phase 3 around each remaining violation: narrow segments first, and
// for each width first without changing the segment's composition.
void resolve_segments(table& t, const std::vector<int>& orig, long& work,
                      std::size_t max_moved) {
  const auto q = t.size();
  for (std::uint32_t a = 0; a < q && work > 0; ++a) {
    if (t.near(a, t.own[a]) == 0)
      continue;
    if (moved_count(t.own, orig) > max_moved)
      return;
    bool solved = false;
    for (std::uint32_t scale : {4u, 6u, 8u, 12u}) {
      const auto len = std::min(q, scale * t.n);
      for (int surplus = 0; surplus <= max_segment_surplus && !solved; ++surplus) {
        long budget = std::min(work, segment_search_budget);
        const long granted = budget;
        solved = resolve_segment(t, orig, (a + q - len / 2) % q, len, surplus, budget);
        work -= granted - budget;
      }
      if (solved || len == q)
        break;
    }
  }
}

// A table with every window of n distinct whenever the largest target m
// satisfies m * n <= Q (docs/RING.md, "Guarantees", for the proof): list
// the members by target, largest first, each repeated target times; deal
// the list round-robin into m rows; concatenate the rows.
std::vector<int> canonical_table(const std::vector<int>& target, std::uint32_t q) {
  std::vector<int> order(target.size());
  for (std::size_t k = 0; k < target.size(); ++k)
    order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return target[a] > target[b]; });
  std::vector<int> list;
  list.reserve(q);
  for (int k : order)
    list.insert(list.end(), static_cast<std::size_t>(target[k]), k);
  const auto rows = static_cast<std::size_t>(std::max(1, target[order.front()]));
  std::vector<int> out;
  out.reserve(q);
  for (std::size_t row = 0; row < rows; ++row)
    for (std::size_t j = row; j < list.size(); j += rows)
      out.push_back(list[j]);
  return out;
}

// Renames the members of `canon` (a permutation keeps it balanced and
// valid) so that it agrees with `orig` on many partitions: a greedy
// matching, largest agreement first, ties by index.
std::vector<int> relabel(const std::vector<int>& canon, const std::vector<int>& orig,
                         int nodes) {
  const auto q = canon.size();
  std::map<std::pair<int, int>, long> agree; // (symbol, member) -> partitions
  for (std::size_t p = 0; p < q; ++p)
    if (orig[p] != no_owner)
      ++agree[{canon[p], orig[p]}];
  std::vector<std::tuple<long, int, int>> edges; // (-agreement, symbol, member)
  for (const auto& [pair, n] : agree)
    edges.emplace_back(-n, pair.first, pair.second);
  std::sort(edges.begin(), edges.end());
  std::vector<int> to(nodes, no_owner);
  std::vector<bool> taken(nodes, false);
  for (const auto& [neg, sym, member] : edges)
    if (to[sym] == no_owner && !taken[member]) {
      to[sym] = member;
      taken[member] = true;
    }
  int free_member = 0;
  for (int sym = 0; sym < nodes; ++sym) {
    if (to[sym] != no_owner)
      continue;
    while (taken[free_member])
      ++free_member;
    to[sym] = free_member;
    taken[free_member] = true;
  }
  std::vector<int> out(q);
  for (std::size_t p = 0; p < q; ++p)
    out[p] = to[canon[p]];
  return out;
}

// The fallback: the canonical table, rotated and renamed to move the fewest
// partitions among the rotations tried.
std::vector<int> best_canonical(const std::vector<int>& target,
                                const std::vector<int>& orig) {
  const auto q = static_cast<std::uint32_t>(orig.size());
  const auto canon = canonical_table(target, q);
  const auto rotations = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
    rotation_work / q, 1, std::min<std::uint64_t>(q, max_rotations)));
  std::vector<int> best;
  std::size_t best_moves = 0;
  std::vector<int> rotated(q);
  for (std::uint32_t r = 0; r < rotations; ++r) {
    for (std::uint32_t p = 0; p < q; ++p)
      rotated[p] = canon[(p + r) % q];
    auto candidate = relabel(rotated, orig, static_cast<int>(target.size()));
    const auto m = moved_count(candidate, orig);
    if (best.empty() || m < best_moves) {
      best = std::move(candidate);
      best_moves = m;
    }
  }
  return best;
}

} // namespace

std::ostream& operator<<(std::ostream& os, const handoff& h) {
  return os << "{partition " << h.partition << ": " << h.from << " -> " << h.to
            << "}";
}

std::uint32_t effective_n_val(std::uint32_t q, std::size_t nodes,
                              std::uint32_t n_val) noexcept {
  std::uint64_t n = n_val;
  n = std::min<std::uint64_t>(n, nodes);
  n = std::min<std::uint64_t>(n, q);
  return static_cast<std::uint32_t>(n);
}

bool distinctness_guaranteed(std::uint32_t q, std::size_t nodes,
                             std::uint32_t n_val) noexcept {
  if (nodes == 0)
    return false;
  const std::uint64_t n = effective_n_val(q, nodes, n_val);
  const std::uint64_t most = (std::uint64_t{q} + nodes - 1) / nodes; // ceil
  return n * most <= q;
}

std::size_t window_violations(const owner_table& owners, std::uint32_t n) {
  const auto q = owners.size();
  const auto w = std::min<std::size_t>(n, q);
  if (w <= 1)
    return 0;
  std::map<std::string_view, std::uint32_t> in_window;
  std::size_t repeated = 0; // nodes seen at least twice in the window
  auto add = [&](std::string_view s) {
    if (++in_window[s] == 2)
      ++repeated;
  };
  auto drop = [&](std::string_view s) {
    if (in_window[s]-- == 2)
      --repeated;
  };
  for (std::size_t i = 0; i < w; ++i)
    add(owners[i]);
  std::size_t violations = 0;
  for (std::size_t i = 0; i < q; ++i) {
    violations += repeated > 0;
    drop(owners[i]);
    add(owners[(i + w) % q]);
  }
  return violations;
}

std::vector<handoff> moves(const owner_table& before, const owner_table& after) {
  std::vector<handoff> out;
  const auto q = std::min(before.size(), after.size());
  for (std::size_t p = 0; p < q; ++p)
    if (before[p] != after[p])
      out.push_back({static_cast<std::uint32_t>(p), before[p], after[p]});
  return out;
}

expected<owner_table> claim_ownership(const owner_table& current,
                                      const std::vector<node_id>& members,
                                      std::uint32_t n_val) {
  const auto q = static_cast<std::uint32_t>(
    std::min<std::size_t>(current.size(), std::size_t{max_partition_count} + 1));
  if (!check_partition_count(q))
    return make_error(errc::invalid_argument,
                      "the ownership table has " + std::to_string(current.size())
                        + " entries; a ring size is a power of two between 1 "
                          "and 65536.");
  if (n_val == 0)
    return make_error(errc::invalid_argument,
                      "n_val is 0; every partition needs at least one replica.");
  if (members.empty())
    return make_error(errc::invalid_argument,
                      "claim needs at least one member to own the partitions.");
  std::vector<node_id> ids = members;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.front().empty())
    return make_error(errc::invalid_argument, "a member has an empty node id.");

  std::map<std::string_view, int> index;
  for (std::size_t k = 0; k < ids.size(); ++k)
    index.emplace(ids[k], static_cast<int>(k));
  std::vector<int> orig(q, no_owner);
  std::vector<int> count(ids.size(), 0);
  for (std::uint32_t p = 0; p < q; ++p)
    if (auto it = index.find(current[p]); it != index.end()) {
      orig[p] = it->second;
      ++count[it->second];
    }

  const auto target = balanced_targets(count, q);
  const bool strict = distinctness_guaranteed(q, ids.size(), n_val);
  const table start{orig, effective_n_val(q, ids.size(), n_val),
                    static_cast<int>(ids.size())};
  // Balance alone requires this many moves: non-members' partitions and
  // the members' surpluses.
  std::size_t required = 0;
  for (std::size_t k = 0; k < ids.size(); ++k)
    required += static_cast<std::size_t>(std::max(0, target[k] - count[k]));

  // The ways phase 1 may hand out non-members' partitions; they succeed on
  // different rings, so each is tried until one moves only what balance
  // requires.
  enum class orphan_fill { matched, constrained_first, plain };
  auto incremental = [&](orphan_fill how) {
    table t = start;
    auto c = count;
    if (how == orphan_fill::matched)
      match_orphans(t, c, target);
    if (how != orphan_fill::plain)
      fill_orphans(t, c, target);
    fill_deficits(t, c, target, strict);
    long work = std::max(min_repair_work, repair_work_per_partition * static_cast<long>(q));
    if (!strict) {
      // Best effort: fewer repeats, but no move beyond what balance requires.
      repair(t, orig, false, work, q);
    } else if (t.violations() > 0) {
      repair(t, orig, true, work, q);
      if (t.violations() > 0) {
        resolve_segments(t, orig, work, q);
        repair(t, orig, true, work, q);
      }
    }
    return t;
  };

  if (strict && 2 * required >= q) {
    // Balance alone reshuffles half the ring or more (e.g. a founder's ring
    // claimed by many members at once): the renamed canonical table is
    // distinct, and when it moves only what balance requires no table
    // moves fewer. Cheaper than the incremental fill at this scale.
    auto canon = best_canonical(target, orig);
    if (moved_count(canon, orig) == required) {
      owner_table out(q);
      for (std::uint32_t p = 0; p < q; ++p)
        out[p] = ids[static_cast<std::size_t>(canon[p])];
      return out;
    }
  }

  table t = incremental(orphan_fill::matched);
  if (strict) {
    auto done = [&](const table& x) {
      return x.violations() == 0 && moved_count(x.own, orig) == required;
    };
    auto better = [&](const table& a, const table& b) {
      if ((a.violations() == 0) != (b.violations() == 0))
        return a.violations() == 0;
      return moved_count(a.own, orig) < moved_count(b.own, orig);
    };
    // Without non-members' partitions the variants coincide.
    const bool orphans = std::find(orig.begin(), orig.end(), no_owner) != orig.end();
    for (auto how : {orphan_fill::constrained_first, orphan_fill::plain}) {
      if (done(t) || !orphans)
        break;
      table other = incremental(how);
      if (better(other, t))
        t = std::move(other);
    }
    if (!done(t)) {
      // The canonical table is always valid: the last resort, and a better
      // answer when the ring must be rebuilt anyway (e.g. a periodic table).
      table canon{best_canonical(target, orig), t.n, t.nodes};
      if (better(canon, t))
        t = std::move(canon);
    }
  }

  owner_table out(q);
  for (std::uint32_t p = 0; p < q; ++p)
    out[p] = ids[static_cast<std::size_t>(t.own[p])];
  return out;
}

} // namespace tally
