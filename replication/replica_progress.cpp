#include "replication/replica_progress.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace tally {

expected<replica_progress> replica_progress::make(std::vector<node_id> replicas,
                                                  std::uint32_t w) {
  if (w < 1 || w > replicas.size() + 1)
    return make_error(errc::invalid_argument,
                      "write quorum " + std::to_string(w) + " is not between 1 and "
                        + std::to_string(replicas.size() + 1) + " copies");
  std::set<node_id> distinct(replicas.begin(), replicas.end());
  if (distinct.size() != replicas.size())
    return make_error(errc::invalid_argument, "a replica is listed twice");
  return replica_progress{std::move(replicas), w};
}

std::size_t replica_progress::find(const node_id& r) const {
  auto i = std::find(replicas_.begin(), replicas_.end(), r);
  return static_cast<std::size_t>(i - replicas_.begin());
}

void replica_progress::local_durable(lsn end) noexcept {
  local_ = std::max(local_, end);
}

void replica_progress::acked(const node_id& r, lsn end) {
  auto i = find(r);
  if (i < ends_.size())
    ends_[i] = std::max(ends_[i], end);
}

void replica_progress::rewound(const node_id& r, lsn end) {
  auto i = find(r);
  if (i < ends_.size())
    ends_[i] = end;
}

lsn replica_progress::quorum_end() const {
  std::vector<lsn> all = ends_;
  all.push_back(local_);
  // The w-th largest: w copies hold every LSN below it.
  std::nth_element(all.begin(), all.begin() + (w_ - 1), all.end(),
                   std::greater<lsn>{});
  return all[w_ - 1];
}

lsn replica_progress::all_end() const {
  lsn out = local_;
  for (auto e : ends_)
    out = std::min(out, e);
  return out;
}

lsn replica_progress::end_of(const node_id& r) const {
  auto i = find(r);
  return i < ends_.size() ? ends_[i] : 0;
}

} // namespace tally
