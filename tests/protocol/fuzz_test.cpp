// Fuzzing the decoders (DESIGN.md, "Testing": fuzzed decoders). Random bytes
// and random mutations of valid frames go through the frame decoder,
// decode_request and decode_response: each must decode or return a clean
// error, never crash, never throw. Replay a failure with
//   TALLY_TEST_SEED=<seed> ./test_protocol --run_test=protocol_fuzz
// Run under -fsanitize=address,undefined by hand (docs/PROTOCOL.md,
// "Testing").
#include <boost/test/unit_test.hpp>

#include <iterator>
#include <string>
#include <vector>

#include "protocol/descriptor.hpp"
#include "protocol/frame.hpp"
#include "protocol/messages.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

// Valid frames of every request and response, the seeds of the mutations.
std::vector<frame> corpus() {
  auto desc = encode_tx_descriptor(
    tx_descriptor{tx_id{1, 2}, "tally@n", 5, vector_clock{{1, 3}}});
  auto clock = encode_clock(vector_clock{{1, 7}, {2, 8}});
  bound_object c{object_key{"bucket", "key"}, crdt_type::counter};
  bound_object s{object_key{"b", "set"}, crdt_type::orset};
  update_op u{c, counter_op{counter_update{-9}, op_id{11, 12}}};
  update_op v{c, counter_op{counter_update{1}, std::nullopt}};
  update_op w{s, unsupported_op{op_kind::set}};
  std::vector<frame> out;
  for (const request& r : std::vector<request>{
         read_objects_req{{c, s}, desc},
         update_objects_req{{u, v, w}, desc},
         start_transaction_req{clock},
         start_transaction_req{},
         abort_transaction_req{desc},
         commit_transaction_req{desc},
         static_update_objects_req{start_transaction_req{clock}, {u, v}},
         static_read_objects_req{{}, {c, c, s}},
         admin_req{"status", {}},
         admin_req{"leave", {"tally@127.0.0.1:9087", "x"}},
       })
    out.push_back(encode_request(r));
  for (const response& r : std::vector<response>{
         error_resp{make_error(errc::wrong_type, "no")},
         operation_resp{},
         start_transaction_resp{true, desc, 0},
         read_objects_resp{true, {crdt_value{std::int64_t{1} << 50}}, 0},
         commit_resp{true, clock, 0},
         static_read_objects_resp{read_objects_resp{true, {crdt_value{std::int64_t{4}}}, 0},
                                  commit_resp{true, clock, 0}},
         admin_resp{true, "members: 1", 0},
         admin_resp::failure(errc::not_found, "no such node"),
       })
    out.push_back(encode_response(r));
  return out;
}

std::string mutate(test::seeded_rng& rng, std::string bytes) {
  auto edits = rng.uniform(1, 4);
  for (std::uint64_t i = 0; i < edits; ++i) {
    auto at = bytes.empty() ? 0 : rng.uniform(0, bytes.size() - 1);
    switch (rng.uniform(0, 5)) {
      case 0: // flip a bit
        if (!bytes.empty())
          bytes[at] = static_cast<char>(bytes[at] ^ (1 << rng.uniform(0, 7)));
        break;
      case 1: // overwrite a byte
        if (!bytes.empty())
          bytes[at] = static_cast<char>(rng.uniform(0, 255));
        break;
      case 2: // insert random bytes
        bytes.insert(at, std::string(rng.uniform(1, 8),
                                     static_cast<char>(rng.uniform(0, 255))));
        break;
      case 3: // delete a range
        if (!bytes.empty())
          bytes.erase(at, rng.uniform(1, 8));
        break;
      case 4: // truncate
        bytes.resize(at);
        break;
      case 5: // duplicate a range (repeated fields, merged messages)
        if (!bytes.empty())
          bytes.insert(at, bytes.substr(at, rng.uniform(1, 16)));
        break;
    }
  }
  return bytes;
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// A random message in protobuf's wire format: fields numbered like
// AntidoteDB's (1..7) and Tally's (100), some others; varints that are
// valid CRDT types or not; nested messages. Unlike random bytes, these get
// past the parser and exercise the validation behind it.
std::string random_message(test::seeded_rng& rng, int depth) {
  static constexpr std::uint32_t numbers[] = {1, 2, 3, 4, 5, 6, 7, 1, 2, 3,
                                              100, 101, 8, 15, 536870911};
  std::string out;
  for (auto n = rng.uniform(0, 6); n > 0; --n) {
    auto number = numbers[rng.uniform(0, std::size(numbers) - 1)];
    switch (rng.uniform(0, 4)) {
      case 0: // varint: small, a CRDT type, or anything
        put_varint(out, std::uint64_t{number} << 3 | 0);
        put_varint(out, rng.chance(0.5) ? rng.uniform(0, 16)
                                        : rng.uniform(0, ~0ULL));
        break;
      case 1: case 2: { // nested message (length-delimited)
        auto inner = depth > 0 ? random_message(rng, depth - 1) : std::string{};
        put_varint(out, std::uint64_t{number} << 3 | 2);
        put_varint(out, inner.size());
        out += inner;
        break;
      }
      case 3: { // bytes
        std::string bytes(rng.uniform(0, 12), static_cast<char>(rng.uniform(0, 255)));
        put_varint(out, std::uint64_t{number} << 3 | 2);
        put_varint(out, bytes.size());
        out += bytes;
        break;
      }
      case 4: // fixed32 / fixed64
        if (rng.chance(0.5)) {
          put_varint(out, std::uint64_t{number} << 3 | 5);
          out.append(4, static_cast<char>(rng.uniform(0, 255)));
        } else {
          put_varint(out, std::uint64_t{number} << 3 | 1);
          out.append(8, static_cast<char>(rng.uniform(0, 255)));
        }
        break;
    }
  }
  return out;
}

// Every API entry point on one body, under every code that matters.
void decode_everything(std::uint8_t code, const std::string& body,
                       std::size_t& decoded, std::size_t& refused) {
  auto check = [&](const auto& result) {
    if (result.has_value()) {
      ++decoded;
    } else {
      ++refused;
      BOOST_REQUIRE(result.err().code() != errc::ok);
      BOOST_REQUIRE(!result.err().message().empty());
    }
  };
  auto req = decode_request(code, body);
  check(req);
  if (req) {
    // What decodes re-encodes to something that decodes to the same value.
    auto again = encode_request(*req);
    auto back = decode_request(again.code, again.body);
    BOOST_REQUIRE(back.has_value());
    BOOST_REQUIRE((*back == *req));
  }
  auto resp = decode_response(code, body);
  check(resp);
  if (resp) {
    auto again = encode_response(*resp);
    auto back = decode_response(again.code, again.body);
    BOOST_REQUIRE(back.has_value());
  }
  check(decode_clock(body));
  check(decode_tx_descriptor(body));
}

} // namespace

BOOST_AUTO_TEST_SUITE(protocol_fuzz)

BOOST_AUTO_TEST_CASE(random_bytes_never_crash_the_decoders) {
  test::seeded_rng rng;
  std::size_t decoded = 0;
  std::size_t refused = 0;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 20000; ++i) {
      std::string bytes(rng.uniform(0, 200), '\0');
      for (auto& b : bytes)
        b = static_cast<char>(rng.uniform(0, 255));
      // As a stream: random max size, random chunking.
      frame_decoder dec{static_cast<std::uint32_t>(rng.uniform(1, 300))};
      for (std::size_t at = 0; at < bytes.size();) {
        auto n = rng.uniform(1, 32);
        BOOST_CHECK_NO_THROW((void)dec.feed(std::string_view{bytes}.substr(at, n)));
        at += n;
        while (auto f = dec.next())
          decode_everything(f->code, f->body, decoded, refused);
      }
      (void)dec.finish();
      // As a body under a random code, biased towards the served ones
      // (AntidoteDB's and Tally's admin pair).
      auto code = rng.chance(0.1)
                    ? static_cast<std::uint8_t>(rng.uniform(240, 241))
                  : rng.chance(0.7)
                    ? static_cast<std::uint8_t>(rng.uniform(116, 128))
                    : static_cast<std::uint8_t>(rng.uniform(0, 255));
      decode_everything(code, bytes, decoded, refused);
    }
  }
  BOOST_TEST_MESSAGE("random bytes: " << decoded << " decoded, " << refused
                                      << " refused");
  BOOST_TEST(refused > 0u);
}

BOOST_AUTO_TEST_CASE(random_protobuf_messages_decode_or_fail_cleanly) {
  test::seeded_rng rng;
  std::size_t decoded = 0;
  std::size_t refused = 0;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 30000; ++i) {
      auto code = static_cast<std::uint8_t>(
        rng.chance(0.2)   ? 0
        : rng.chance(0.1) ? rng.uniform(240, 241)
                          : rng.uniform(111, 128));
      decode_everything(code, random_message(rng, 4), decoded, refused);
    }
  }
  BOOST_TEST_MESSAGE("random messages: " << decoded << " decoded, "
                                         << refused << " refused");
  BOOST_TEST(decoded > 0u);
  BOOST_TEST(refused > 0u);
}

BOOST_AUTO_TEST_CASE(mutated_valid_frames_decode_or_fail_cleanly) {
  test::seeded_rng rng;
  auto seeds = corpus();
  std::size_t decoded = 0;
  std::size_t refused = 0;
  TALLY_SEED_CONTEXT(rng) {
    for (int i = 0; i < 30000; ++i) {
      const auto& seed = seeds[rng.uniform(0, seeds.size() - 1)];
      // Mutate the whole frame (length and code included) half the time,
      // only the body the other half.
      if (rng.chance(0.5)) {
        auto stream = mutate(rng, *encode_frame(seed));
        frame_decoder dec{1 << 12};
        (void)dec.feed(stream);
        while (auto f = dec.next())
          decode_everything(f->code, f->body, decoded, refused);
        (void)dec.finish();
      } else {
        auto code = rng.chance(0.9)
                      ? seed.code
                      : static_cast<std::uint8_t>(rng.uniform(0, 255));
        decode_everything(code, mutate(rng, seed.body), decoded, refused);
      }
    }
  }
  BOOST_TEST_MESSAGE("mutations: " << decoded << " decoded, " << refused
                                   << " refused");
  BOOST_TEST(decoded > 0u);
  BOOST_TEST(refused > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
