// libFuzzer target: the decoders of what another node sends once its link is
// up (docs/CLUSTER.md, "Messages between nodes"; docs/REPLICATION.md):
//   - actors/wire.hpp decode_wire<T> for every partition message type and
//     the coordinator's decision (tx_decide_req, tx_decide_resp);
//   - replication/replication_batch.hpp decode_batch (log shipping);
//   - ring/ring_state.hpp ring_state::decode (gossip).
// Byte 0 picks the decoder, the rest is the message. Whatever decodes must
// re-encode to bytes that decode again to the same re-encoding (the encoders
// are deterministic; Cereal's bool and the wire's variant tags accept more
// than one spelling, so the input itself need not come back byte for byte).
//
// The node links are authenticated before any of these bytes are read
// (docs/SECURITY.md, "Node links"), so this is the decoder a member with the
// cluster secret, or a bug in one, can reach.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "actors/wire.hpp"
#include "replication/replication_batch.hpp"
#include "ring/ring_state.hpp"

namespace {

template <class T>
void wire_round_trip(std::string_view in) {
  auto m = tally::decode_wire<T>(in);
  if (!m)
    return;
  const std::string once = tally::encode_wire(*m);
  auto again = tally::decode_wire<T>(once);
  if (!again || tally::encode_wire(*again) != once)
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tally;
  if (size == 0)
    return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 15) {
    case 0: wire_round_trip<part_read_req>(in); break;
    case 1: wire_round_trip<part_read_resp>(in); break;
    case 2: wire_round_trip<part_prepare_req>(in); break;
    case 3: wire_round_trip<part_time_resp>(in); break;
    case 4: wire_round_trip<part_commit_req>(in); break;
    case 5: wire_round_trip<part_abort_req>(in); break;
    case 6: wire_round_trip<part_ack>(in); break;
    case 7: wire_round_trip<tx_id>(in); break;
    case 8: wire_round_trip<part_find_resp>(in); break;
    case 9: wire_round_trip<part_stale_resp>(in); break;
    case 10: wire_round_trip<std::uint64_t>(in); break;
    case 11:
      if (auto b = decode_batch(in)) {
        const std::string once = encode_batch(*b);
        auto again = decode_batch(once);
        if (!again || encode_batch(*again) != once)
          std::abort();
      }
      break;
    case 13: wire_round_trip<tx_decide_req>(in); break;
    case 14: wire_round_trip<tx_decide_resp>(in); break;
    default:
      if (auto r = ring_state::decode(in)) {
        // Equal states give equal bytes (docs/RING.md, "Format").
        const std::string once = r->encode();
        auto again = ring_state::decode(once);
        if (!again || *again != *r || again->encode() != once)
          std::abort();
      }
      break;
  }
  return 0;
}
