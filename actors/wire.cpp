#include "actors/wire.hpp"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

namespace tally {

namespace {

// crdt_type travels as its AntidoteDB wire number, as in journal records.
template <class Archive>
void crdt_type_field(Archive& ar, crdt_type& t) {
  auto wire = static_cast<std::uint8_t>(t);
  ar(wire);
  if constexpr (Archive::is_loading::value) {
    if (!crdt_type_from_wire(wire, t))
      throw cereal::Exception("unknown CRDT type id " + std::to_string(wire));
  }
}

} // namespace

template <class Archive>
void serialize(Archive& ar, read_item& x) {
  ar(x.key);
  crdt_type_field(ar, x.type);
  ar(x.own);
}

template <class Archive>
void serialize(Archive& ar, tx_update& x) {
  ar(x.key);
  crdt_type_field(ar, x.type);
  ar(x.effect, x.op);
}

template <class Archive>
void serialize(Archive& ar, part_read_req& x) {
  ar(x.snapshot, x.items);
}

template <class Archive>
void serialize(Archive& ar, part_read_resp& x) {
  ar(x.err, x.values);
}

template <class Archive>
void serialize(Archive& ar, part_prepare_req& x) {
  ar(x.tx, x.updates, x.snapshot_time, x.two_phase);
}

template <class Archive>
void serialize(Archive& ar, part_time_resp& x) {
  ar(x.err, x.time, x.dismissed);
}

template <class Archive>
void serialize(Archive& ar, part_commit_req& x) {
  ar(x.tx, x.commit_time);
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
  ar(x.err, x.commit_time, x.folded_through);
}

template <class Archive>
void serialize(Archive& ar, part_stale_resp& x) {
  ar(x.err, x.txs, x.prepare_times);
}

template <class T>
std::string encode_wire(const T& msg) {
  std::ostringstream os;
  os.put(static_cast<char>(wire_version));
  {
    cereal::PortableBinaryOutputArchive ar{os};
    ar(msg);
  }
  return std::move(os).str();
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
  try {
    std::istringstream is{std::string{bytes.substr(1)}};
    cereal::PortableBinaryInputArchive ar{is};
    ar(out);
    if (is.peek() != std::char_traits<char>::eof())
      return make_error(errc::corrupt, "trailing bytes in a node-to-node message");
  } catch (const std::exception& e) {
    return make_error(errc::corrupt,
                      std::string{"undecodable node-to-node message: "} + e.what());
  }
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
TALLY_WIRE_MESSAGE(std::uint64_t)

#undef TALLY_WIRE_MESSAGE

} // namespace tally
