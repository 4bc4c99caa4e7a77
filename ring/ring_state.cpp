#include "ring/ring_state.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include <cereal/archives/portable_binary.hpp>

#include "common/hash.hpp"

namespace tally {

namespace {

// Ring state format versions (docs/RING.md, "Format"). Bump on any layout
// change and keep the decoder for every version ever written. Version 2
// (issue 18) adds the removed status and the removal records; a ring with
// neither is still written as version 1, byte for byte as before.
constexpr std::uint8_t ring_format_v1 = 1;
constexpr std::uint8_t ring_format_v2 = 2;

// Seed of ownership::content_hash, so that the hash of an owner table
// differs from a plain hash of its ids. Fixed forever: merges compare it.
constexpr std::uint64_t ownership_hash_seed = 0x72696e672d6f776eULL; // "ring-own"

// Thrown inside decode() only, and caught there: a field outside its domain.
struct bad_field {
  std::string what;
};

void write_id(cereal::PortableBinaryOutputArchive& ar, const std::string& id) {
  ar(static_cast<std::uint64_t>(id.size()));
  ar(cereal::binary_data(id.data(), id.size()));
}

// Decoding side: the archive plus the input size, so that every length is
// checked against the bytes left before anything is allocated.
class reader {
public:
  explicit reader(std::string_view bytes)
      : in_(std::string{bytes}), size_(bytes.size()), ar_(in_) {}

  template <class T>
  T read() {
    T value{};
    ar_(value);
    return value;
  }

  // A count of elements that take at least `min_bytes` each.
  std::uint64_t read_count(std::uint64_t min_bytes, const char* what) {
    const auto n = read<std::uint64_t>();
    if (n > remaining() / min_bytes)
      throw bad_field{std::string{what} + " count exceeds the encoding's length"};
    return n;
  }

  std::string read_id(const char* what) {
    const auto len = read<std::uint64_t>();
    if (len == 0 || len > max_node_id_length || len > remaining())
      throw bad_field{std::string{what} + " has an invalid length"};
    std::string id(static_cast<std::size_t>(len), '\0');
    ar_(cereal::binary_data(id.data(), id.size()));
    return id;
  }

  bool at_end() { return in_.peek() == std::char_traits<char>::eof(); }

private:
  std::uint64_t remaining() {
    const auto pos = in_.tellg();
    return pos < 0 ? 0 : size_ - static_cast<std::uint64_t>(pos);
  }

  std::istringstream in_;
  std::uint64_t size_;
  cereal::PortableBinaryInputArchive ar_;
};

} // namespace

status check_node_id(std::string_view node) {
  if (node.empty())
    return make_error(errc::invalid_argument, "a node id must not be empty.");
  if (node.size() > max_node_id_length)
    return make_error(errc::invalid_argument,
                      "node id of " + std::to_string(node.size())
                        + " bytes is longer than the limit of "
                        + std::to_string(max_node_id_length) + " bytes.");
  return {};
}

std::string_view to_string(member_status s) noexcept {
  switch (s) {
    case member_status::joining:
      return "joining";
    case member_status::valid:
      return "valid";
    case member_status::leaving:
      return "leaving";
    case member_status::exited:
      return "exited";
    case member_status::removed:
      return "removed";
  }
  return "unknown";
}

bool precedes(const member_info& a, const member_info& b) noexcept {
  return std::make_tuple(a.incarnation, a.status)
         < std::make_tuple(b.incarnation, b.status);
}

bool precedes(const removed_copy& a, const removed_copy& b) {
  return std::tie(a.at_us, a.from, a.only_copy, a.recreated)
         < std::tie(b.at_us, b.from, b.only_copy, b.recreated);
}

std::uint64_t ownership::content_hash() const noexcept {
  std::uint64_t h = hash_pair(owners.size(), 0, ownership_hash_seed);
  for (const auto& owner : owners)
    h = hash_bytes(owner, h); // chained: order and boundaries both count
  return h;
}

std::uint32_t ownership::view_tag() const noexcept {
  const std::uint64_t h = hash_bytes(claimant, content_hash());
  return static_cast<std::uint32_t>(h & 0xffffffu);
}

std::uint64_t view_rank(const ownership& o) noexcept {
  return (o.epoch << 24) | o.view_tag();
}

std::string view_rank_name(std::uint64_t rank) {
  std::ostringstream out;
  out << (rank >> 24) << '/' << std::hex << (rank & 0xffffffu);
  return out.str();
}

bool precedes(const ownership& a, const ownership& b) {
  if (a.epoch != b.epoch)
    return a.epoch < b.epoch;
  // The view tag next, so that the merge keeps the view of higher rank
  // (view_rank): a fence that took one view's rank refuses the other's.
  const auto ta = a.view_tag();
  const auto tb = b.view_tag();
  if (ta != tb)
    return ta < tb;
  if (a.claimant != b.claimant)
    return a.claimant < b.claimant;
  const auto ha = a.content_hash();
  const auto hb = b.content_hash();
  if (ha != hb)
    return ha < hb;
  return a.owners < b.owners; // a hash collision still orders deterministically
}

expected<ring_state> ring_state::create(const node_id& founder,
                                        std::uint32_t partitions,
                                        std::uint32_t n_val) {
  if (auto st = check_node_id(founder); !st)
    return st.err();
  if (auto st = check_partition_count(partitions); !st)
    return st.err();
  if (n_val == 0 || n_val > max_n_val)
    return make_error(errc::invalid_argument,
                      "n_val " + std::to_string(n_val) + " is outside [1, "
                        + std::to_string(max_n_val) + "].");
  ring_state r;
  r.partitions_ = partitions;
  r.n_val_ = n_val;
  r.members_[founder] = member_info{member_status::valid, 0};
  r.ownership_ = ownership{0, founder, owner_table(partitions, founder)};
  return r;
}

std::vector<node_id> ring_state::active_members() const {
  std::vector<node_id> out;
  for (const auto& [node, info] : members_)
    if (info.status == member_status::joining || info.status == member_status::valid)
      out.push_back(node);
  return out;
}

status ring_state::join(const node_id& node) {
  if (auto st = check_node_id(node); !st)
    return st;
  auto it = members_.find(node);
  if (it == members_.end()) {
    members_.emplace(node, member_info{member_status::joining, 0});
    return {};
  }
  auto& info = it->second;
  if (info.status == member_status::leaving || info.status == member_status::exited
      || info.status == member_status::removed)
    info = member_info{member_status::joining, info.incarnation + 1};
  return {};
}

status ring_state::leave(const node_id& node) {
  auto it = members_.find(node);
  if (it == members_.end() || it->second.status == member_status::exited
      || it->second.status == member_status::removed)
    return make_error(errc::not_found, "node " + node + " is not a member of the ring.");
  auto& info = it->second;
  if (info.status == member_status::leaving)
    return {};
  if (active_members().size() == 1)
    return make_error(errc::invalid_argument,
                      "node " + node + " is the last member that can own "
                        "partitions; add a member before it leaves.");
  info.status = member_status::leaving;
  return {};
}

status ring_state::remove(const node_id& node, std::uint64_t now_us,
                          const std::map<std::uint32_t, bool>& held) {
  auto it = members_.find(node);
  if (it == members_.end() || it->second.status == member_status::removed)
    return make_error(errc::not_found, "node " + node + " is not a member of the ring.");
  auto active = active_members();
  const bool is_active = std::find(active.begin(), active.end(), node) != active.end();
  if (is_active && active.size() == 1)
    return make_error(errc::invalid_argument,
                      "node " + node + " is the last member that can own partitions.");
  for (const auto& [p, only] : held)
    if (p >= partitions_)
      return make_error(errc::invalid_argument,
                        "partition " + std::to_string(p) + " is outside a ring of "
                          + std::to_string(partitions_) + " partitions.");
  it->second.status = member_status::removed;
  for (const auto& [p, only] : held)
    removals_[p] = removed_copy{node, now_us, only, false};
  return {};
}

void ring_state::mark_recreated(std::uint32_t partition) {
  if (auto it = removals_.find(partition); it != removals_.end())
    it->second.recreated = true;
}

std::optional<node_id> ring_state::claimant() const {
  for (auto wanted : {member_status::valid, member_status::joining})
    for (const auto& [node, info] : members_) // ascending ids
      if (info.status == wanted)
        return node;
  return std::nullopt;
}

expected<std::vector<handoff>> ring_state::claim(const node_id& self) {
  const auto who = claimant();
  if (!who || *who != self)
    return make_error(errc::invalid_argument,
                      "node " + self + " is not the claimant"
                        + (who ? "; " + *who + " is." : "; the ring has none."));
  auto next = claim_ownership(ownership_.owners, active_members(), n_val_);
  if (!next)
    return next.err();
  for (auto& [node, info] : members_) {
    if (info.status == member_status::joining)
      info.status = member_status::valid;
    else if (info.status == member_status::leaving)
      info.status = member_status::exited;
  }
  auto handoffs = moves(ownership_.owners, *next);
  if (!handoffs.empty())
    ownership_ = ownership{ownership_.epoch + 1, self, std::move(*next)};
  return handoffs;
}

status ring_state::merge(const ring_state& other) {
  if (other.partitions_ != partitions_ || other.n_val_ != n_val_)
    return make_error(errc::invalid_argument,
                      "cannot merge a ring of " + std::to_string(other.partitions_)
                        + " partitions and n_val " + std::to_string(other.n_val_)
                        + " into a ring of " + std::to_string(partitions_)
                        + " partitions and n_val " + std::to_string(n_val_) + ".");
  for (const auto& [node, info] : other.members_) {
    auto [it, fresh] = members_.try_emplace(node, info);
    if (!fresh && precedes(it->second, info))
      it->second = info;
  }
  if (precedes(ownership_, other.ownership_))
    ownership_ = other.ownership_;
  for (const auto& [p, r] : other.removals_) {
    auto [it, fresh] = removals_.try_emplace(p, r);
    if (!fresh && precedes(it->second, r))
      it->second = r;
  }
  return {};
}

expected<std::vector<replica>> ring_state::preference_list(std::uint32_t partition) const {
  if (partition >= partitions_)
    return make_error(errc::invalid_argument,
                      "partition " + std::to_string(partition) + " is outside a ring of "
                        + std::to_string(partitions_) + " partitions.");
  const auto& owners = ownership_.owners;
  // Only "at least n_val distinct owners?" matters, so stop counting there:
  // this runs on every routed request and must not build a set of all owners.
  std::vector<std::string_view> distinct;
  distinct.reserve(n_val_);
  for (const auto& o : owners) {
    if (std::find(distinct.begin(), distinct.end(), o) == distinct.end()) {
      distinct.push_back(o);
      if (distinct.size() >= n_val_)
        break;
    }
  }
  const auto n = effective_n_val(partitions_, distinct.size(), n_val_);
  std::vector<replica> out;
  out.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto p = (partition + i) % partitions_;
    out.push_back({p, owners[p]});
  }
  return out;
}

std::vector<replica> ring_state::preference_list(std::string_view bucket,
                                                 std::string_view key) const {
  return *preference_list(partition_index(ring_position(bucket, key), partitions_));
}

std::string ring_state::encode() const {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar{out};
    const bool v2 = !removals_.empty()
                    || std::any_of(members_.begin(), members_.end(), [](const auto& m) {
                         return m.second.status == member_status::removed;
                       });
    ar(v2 ? ring_format_v2 : ring_format_v1, partitions_, n_val_);
    ar(static_cast<std::uint64_t>(members_.size()));
    for (const auto& [node, info] : members_) {
      write_id(ar, node);
      ar(static_cast<std::uint8_t>(info.status), info.incarnation);
    }
    ar(ownership_.epoch);
    write_id(ar, ownership_.claimant);
    // Owners as indices into the sorted table of distinct owners: 4 bytes
    // per partition instead of a full id.
    std::vector<node_id> nodes(ownership_.owners.begin(), ownership_.owners.end());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    ar(static_cast<std::uint64_t>(nodes.size()));
    for (const auto& node : nodes)
      write_id(ar, node);
    for (const auto& owner : ownership_.owners)
      ar(static_cast<std::uint32_t>(
        std::lower_bound(nodes.begin(), nodes.end(), owner) - nodes.begin()));
    if (v2) {
      ar(static_cast<std::uint64_t>(removals_.size()));
      for (const auto& [p, r] : removals_) {
        ar(p);
        write_id(ar, r.from);
        ar(r.at_us);
        ar(static_cast<std::uint8_t>((r.only_copy ? 1 : 0) | (r.recreated ? 2 : 0)));
      }
    }
  }
  return std::move(out).str();
}

expected<ring_state> ring_state::decode(std::string_view bytes) {
  try {
    reader in{bytes};
    const auto version = in.read<std::uint8_t>();
    if (version != ring_format_v1 && version != ring_format_v2)
      return make_error(errc::corrupt, "unknown ring state format version "
                                         + std::to_string(version) + ".");
    const auto last_status = version == ring_format_v1 ? member_status::exited
                                                       : member_status::removed;
    ring_state r;
    r.partitions_ = in.read<std::uint32_t>();
    r.n_val_ = in.read<std::uint32_t>();
    if (!check_partition_count(r.partitions_) || r.n_val_ == 0 || r.n_val_ > max_n_val)
      throw bad_field{"ring size or n_val out of range"};
    // A member takes at least 8 (length) + 1 (id) + 1 + 8 bytes.
    const auto member_count = in.read_count(18, "member");
    for (std::uint64_t i = 0; i < member_count; ++i) {
      auto node = in.read_id("member id");
      const auto status = in.read<std::uint8_t>();
      const auto incarnation = in.read<std::uint64_t>();
      if (status > static_cast<std::uint8_t>(last_status))
        throw bad_field{"unknown member status " + std::to_string(status)};
      if (!r.members_.empty() && !(r.members_.rbegin()->first < node))
        throw bad_field{"member ids are not in ascending order"};
      r.members_.emplace_hint(r.members_.end(), std::move(node),
                              member_info{static_cast<member_status>(status), incarnation});
    }
    r.ownership_.epoch = in.read<std::uint64_t>();
    r.ownership_.claimant = in.read_id("claimant id");
    const auto node_count = in.read_count(9, "owner");
    std::vector<node_id> nodes;
    for (std::uint64_t i = 0; i < node_count; ++i) {
      nodes.push_back(in.read_id("owner id"));
      if (i > 0 && !(nodes[i - 1] < nodes[i]))
        throw bad_field{"owner ids are not in ascending order"};
    }
    r.ownership_.owners.reserve(r.partitions_);
    for (std::uint32_t p = 0; p < r.partitions_; ++p) {
      const auto index = in.read<std::uint32_t>();
      if (index >= nodes.size())
        throw bad_field{"owner index " + std::to_string(index) + " is out of range"};
      r.ownership_.owners.push_back(nodes[index]);
    }
    if (version == ring_format_v2) {
      // A record takes at least 4 + 8 + 1 + 8 + 1 bytes.
      const auto removal_count = in.read_count(22, "removal");
      for (std::uint64_t i = 0; i < removal_count; ++i) {
        const auto p = in.read<std::uint32_t>();
        removed_copy rc;
        rc.from = in.read_id("removed node id");
        rc.at_us = in.read<std::uint64_t>();
        const auto flags = in.read<std::uint8_t>();
        if (p >= r.partitions_)
          throw bad_field{"removal of partition " + std::to_string(p) + " is out of range"};
        if (flags > 3)
          throw bad_field{"unknown removal flags " + std::to_string(flags)};
        if (!r.removals_.empty() && !(r.removals_.rbegin()->first < p))
          throw bad_field{"removal records are not in ascending order"};
        rc.only_copy = (flags & 1) != 0;
        rc.recreated = (flags & 2) != 0;
        r.removals_.emplace_hint(r.removals_.end(), p, std::move(rc));
      }
    }
    if (!in.at_end())
      return make_error(errc::corrupt, "trailing bytes after a ring state encoding.");
    return r;
  } catch (const bad_field& e) {
    return make_error(errc::corrupt, "corrupt ring state: " + e.what + ".");
  } catch (const cereal::Exception& e) {
    return make_error(errc::corrupt,
                      std::string{"truncated ring state encoding: "} + e.what());
  }
}

} // namespace tally
