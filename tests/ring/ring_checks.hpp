// Checks and generators shared by the ring suites. The checks are tested
// themselves (claim_test.cpp, ring_state_test.cpp) on tables and merges
// known to be wrong, so that a passing property means something.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ring/claim.hpp"
#include "tests/support/seeded_rng.hpp"

namespace tally::test {

/// Empty when only `members` own partitions and each owns floor(Q/N) or
/// ceil(Q/N) of them; otherwise a sentence naming the first offender.
inline std::string balance_problem(const owner_table& owners,
                                   const std::vector<node_id>& members) {
  const std::set<node_id> allowed(members.begin(), members.end());
  std::map<node_id, std::size_t> count;
  for (const auto& m : allowed)
    count[m] = 0;
  for (const auto& o : owners) {
    if (allowed.count(o) == 0)
      return "non-member " + o + " owns a partition";
    ++count[o];
  }
  const auto q = owners.size();
  const auto n = allowed.size();
  for (const auto& [m, c] : count)
    if (c < q / n || c > (q + n - 1) / n)
      return m + " owns " + std::to_string(c) + " of " + std::to_string(q)
             + " partitions with " + std::to_string(n) + " members";
  return {};
}

/// `n` distinct node ids shaped like real ones ("tally@10.1.2.3:9100").
inline std::vector<node_id> random_nodes(seeded_rng& rng, std::size_t n) {
  std::set<node_id> ids;
  while (ids.size() < n)
    ids.insert("tally@10." + std::to_string(rng.uniform(0, 255)) + "."
               + std::to_string(rng.uniform(0, 255)) + ":"
               + std::to_string(rng.uniform(9100, 9199)));
  std::vector<node_id> out(ids.begin(), ids.end());
  // Join order independent of id order.
  for (std::size_t i = out.size(); i > 1; --i)
    std::swap(out[i - 1], out[rng.uniform(0, i - 1)]);
  return out;
}

/// Tables of a ring grown the way clusters grow: nodes[0] owns every
/// partition, then nodes join one at a time, each join followed by a claim.
/// Element i is the table with the first i+1 nodes.
inline std::vector<owner_table> grow_ring(const std::vector<node_id>& nodes,
                                          std::uint32_t q, std::uint32_t n_val) {
  std::vector<owner_table> tables{owner_table(q, nodes.front())};
  for (std::size_t i = 2; i <= nodes.size(); ++i) {
    const std::vector<node_id> members(nodes.begin(), nodes.begin() + i);
    tables.push_back(*claim_ownership(tables.back(), members, n_val));
  }
  return tables;
}

/// Partitions of `table` owned by `node`.
inline std::size_t owned_by(const owner_table& table, const node_id& node) {
  return static_cast<std::size_t>(std::count(table.begin(), table.end(), node));
}

} // namespace tally::test
