#include "actors/wire.hpp"

#include <ostream>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "common/bounded_input_archive.hpp"
#include "common/membuf.hpp"

namespace tally {

// A std::vector in Cereal's layout (a size_tag, then the elements), each
// element written by `each`.
template <class Archive, class T, class F>
void vector_as_wire(Archive& ar, std::vector<T>& v, F&& each) {
  cereal::size_type n = v.size();
  ar(cereal::make_size_tag(n));
  if constexpr (Archive::is_loading::value) {
    v.clear();
    // Grown element by element: a corrupted size fails at the end of the
    // input instead of allocating.
    for (cereal::size_type i = 0; i < n; ++i) {
      v.emplace_back();
      each(v.back());
    }
  } else {
    for (auto& x : v)
      each(x);
  }
}

template <class Archive>
void serialize(Archive& ar, read_item& x) {
  ar(x.key);
  crdt_type_as_wire(ar, x.type, "a read item");
  vector_as_wire(ar, x.own, [&](crdt_effect& e) { effect_as_wire(ar, e, "a read item"); });
  ar(x.want_state);
}

template <class Archive>
void serialize(Archive& ar, tx_update& x) {
  ar(x.key);
  crdt_type_as_wire(ar, x.type, "an update");
  effect_as_wire(ar, x.effect, "an update");
  ar(x.op);
}

template <class Archive>
void serialize(Archive& ar, part_read_req& x) {
  ar(x.snapshot, x.items);
}

template <class Archive>
void serialize(Archive& ar, part_read_resp& x) {
  ar(x.err);
  vector_as_wire(ar, x.values, [&](crdt_value& v) { value_as_wire(ar, v, "a read reply"); });
  ar(x.states);
}

template <class Archive>
void serialize(Archive& ar, part_prepare_req& x) {
  ar(x.tx, x.updates, x.snapshot_time, x.two_phase, x.participants, x.coordinator);
}

template <class Archive>
void serialize(Archive& ar, part_time_resp& x) {
  ar(x.err, x.time, x.dismissed);
}

template <class Archive>
void serialize(Archive& ar, part_commit_req& x) {
  ar(x.tx, x.commit_time, x.from_recovery);
}

template <class Archive>
void serialize(Archive& ar, part_abort_req& x) {
  ar(x.tx);
}

template <class Archive>
void serialize(Archive& ar, part_ack& x) {
  ar(x.err);
}

template <class Archive>
void serialize(Archive& ar, part_find_resp& x) {
  ar(x.err, x.commit_time, x.folded_through, x.aborted, x.fenced);
}

template <class Archive>
void serialize(Archive& ar, part_stale_resp& x) {
  ar(x.err, x.txs, x.prepare_times, x.participants, x.coordinators);
}

template <class Archive>
void serialize(Archive& ar, tx_decide_req& x) {
  ar(x.tx, x.force);
}

template <class Archive>
void serialize(Archive& ar, tx_decide_resp& x) {
  ar(x.state, x.commit_time);
  if constexpr (Archive::is_loading::value)
    if (x.state > 3)
      throw cereal::Exception("unknown transaction state " + std::to_string(x.state));
}

template <class T>
std::string encode_wire(const T& msg) {
  std::string out(1, static_cast<char>(wire_version));
  {
    detail::string_sink sink{out};
    std::ostream os{&sink};
    cereal::PortableBinaryOutputArchive ar{os};
    ar(msg);
  }
  return out;
}

template <class T>
expected<T> decode_wire(std::string_view bytes) {
  if (bytes.empty())
    return make_error(errc::corrupt, "empty node-to-node message");
  if (static_cast<std::uint8_t>(bytes[0]) != wire_version)
    return make_error(errc::corrupt,
                      "node-to-node message of version "
                        + std::to_string(static_cast<unsigned>(
                          static_cast<std::uint8_t>(bytes[0])))
                        + ", this node speaks "
                        + std::to_string(unsigned{wire_version}));
  T out;
  // Lengths are checked against the bytes left before anything is
  // allocated for them (common/bounded_input_archive.hpp).
  std::size_t trailing = 0;
  try {
    bounded_input_archive ar{bytes.substr(1)};
    ar(out);
    trailing = ar.remaining();
  } catch (const std::exception& e) {
    return make_error(errc::corrupt,
                      std::string{"undecodable node-to-node message: "} + e.what());
  }
  if (trailing != 0)
    return make_error(errc::corrupt, "trailing bytes in a node-to-node message");
  return out;
}

#define TALLY_WIRE_MESSAGE(T)                                                  \
  template std::string encode_wire<T>(const T&);                               \
  template expected<T> decode_wire<T>(std::string_view);

TALLY_WIRE_MESSAGE(part_read_req)
TALLY_WIRE_MESSAGE(part_read_resp)
TALLY_WIRE_MESSAGE(part_prepare_req)
TALLY_WIRE_MESSAGE(part_time_resp)
TALLY_WIRE_MESSAGE(part_commit_req)
TALLY_WIRE_MESSAGE(part_abort_req)
TALLY_WIRE_MESSAGE(part_ack)
TALLY_WIRE_MESSAGE(tx_id)
TALLY_WIRE_MESSAGE(part_find_resp)
TALLY_WIRE_MESSAGE(part_stale_resp)
TALLY_WIRE_MESSAGE(tx_decide_req)
TALLY_WIRE_MESSAGE(tx_decide_resp)
TALLY_WIRE_MESSAGE(std::uint64_t)

#undef TALLY_WIRE_MESSAGE

} // namespace tally
