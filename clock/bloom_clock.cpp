#include "clock/bloom_clock.hpp"

#include <algorithm>
#include <ostream>

#include "clock/detail/codec.hpp"

namespace tally {

expected<bloom_clock> bloom_clock::make(std::uint32_t m, std::uint32_t k) {
  if (auto problem = parameter_problem(m, k); !problem.empty())
    return make_error(errc::invalid_argument, problem);
  bloom_clock out;
  out.k_ = k;
  out.cells_.assign(m, 0);
  return out;
}

expected<bloom_clock> bloom_clock::from_cells(std::uint32_t k,
                                              std::vector<cell> cells) {
  if (auto problem = parameter_problem(cells.size(), k); !problem.empty())
    return make_error(errc::invalid_argument, problem);
  bloom_clock out;
  out.k_ = k;
  out.cells_ = std::move(cells);
  return out;
}

std::uint32_t bloom_clock::index(std::uint64_t event_hash,
                                 std::uint32_t i) const noexcept {
  auto [h1, h2] = split_hash(mix64(event_hash));
  return static_cast<std::uint32_t>(reduce(h1 + i * h2, cells_.size()));
}

void bloom_clock::tick(std::uint64_t event_hash) noexcept {
  auto [h1, h2] = split_hash(mix64(event_hash));
  std::uint64_t g = h1;
  for (std::uint32_t i = 0; i < k_; ++i, g += h2) {
    cell& c = cells_[reduce(g, cells_.size())];
    if (c != cell_max) // saturate, never wrap (see cell_max)
      ++c;
  }
}

status bloom_clock::merge(const bloom_clock& other) {
  if (!compatible(other))
    return make_error(errc::invalid_argument,
                      "Cannot merge a Bloom clock with m="
                        + std::to_string(other.m()) + ", k="
                        + std::to_string(other.k()) + " into one with m="
                        + std::to_string(m()) + ", k=" + std::to_string(k())
                        + "; both must use the same m and k.");
  for (std::size_t j = 0; j < cells_.size(); ++j)
    cells_[j] = std::max(cells_[j], other.cells_[j]);
  return {};
}

expected<bool> bloom_clock::dominates(const bloom_clock& other) const {
  if (!compatible(other))
    return make_error(errc::invalid_argument,
                      "Cannot compare a Bloom clock with m="
                        + std::to_string(m()) + ", k=" + std::to_string(k())
                        + " against one with m=" + std::to_string(other.m())
                        + ", k=" + std::to_string(other.k())
                        + "; both must use the same m and k.");
  for (std::size_t j = 0; j < cells_.size(); ++j)
    if (cells_[j] < other.cells_[j])
      return false;
  return true;
}

std::uint64_t bloom_clock::sum() const noexcept {
  std::uint64_t s = 0;
  for (cell c : cells_)
    s += c;
  return s;
}

bool bloom_clock::saturated() const noexcept {
  return std::find(cells_.begin(), cells_.end(), cell_max) != cells_.end();
}

std::string bloom_clock::encode() const {
  return detail::encode_object(*this);
}

expected<bloom_clock> bloom_clock::decode(std::string_view bytes) {
  bloom_clock out;
  if (auto st = detail::decode_object(bytes, out, "Bloom clock"); !st)
    return st.err();
  return out;
}

expected<bloom_clock> bloom_clock::decode(std::string_view bytes,
                                          std::uint32_t m, std::uint32_t k) {
  auto out = decode(bytes);
  if (out && (out->m() != m || out->k() != k))
    return make_error(errc::corrupt,
                      "The Bloom clock encoding has m=" + std::to_string(out->m())
                        + ", k=" + std::to_string(out->k())
                        + " but this node uses m=" + std::to_string(m)
                        + ", k=" + std::to_string(k) + ".");
  return out;
}

std::string bloom_clock::unknown_version_message(std::uint32_t version) {
  return "Bloom clock format version " + std::to_string(version)
         + " is unknown; this build reads version "
         + std::to_string(format_version) + ".";
}

std::string bloom_clock::parameter_problem(std::uint64_t m, std::uint32_t k) {
  if (m < 1 || m > max_cells)
    return "A Bloom clock needs 1 to " + std::to_string(max_cells)
           + " cells, not m=" + std::to_string(m) + ".";
  if (k < 1 || k > max_hashes)
    return "A Bloom clock needs 1 to " + std::to_string(max_hashes)
           + " hash functions, not k=" + std::to_string(k) + ".";
  return {};
}

std::string to_string(const bloom_clock& clock) {
  std::string out = "bloom_clock{m=" + std::to_string(clock.m())
                    + ", k=" + std::to_string(clock.k()) + ", [";
  for (std::size_t j = 0; j < clock.cells().size(); ++j) {
    if (j > 0)
      out += ", ";
    out += std::to_string(clock.cells()[j]);
  }
  out += "]}";
  return out;
}

std::ostream& operator<<(std::ostream& os, const bloom_clock& clock) {
  return os << to_string(clock);
}

} // namespace tally
