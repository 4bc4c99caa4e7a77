#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "protocol/frame.hpp"
#include "tests/support/seeded_rng.hpp"

using namespace tally;

namespace {

std::string stream_of(const std::vector<frame>& frames) {
  std::string out;
  for (const auto& f : frames)
    out += *encode_frame(f);
  return out;
}

// Feeds `stream` cut at the given positions (ascending, inside the stream)
// and returns every frame, failing the test on a decoder error.
std::vector<frame> decode_cut(const std::string& stream,
                              const std::vector<std::size_t>& cuts) {
  frame_decoder dec;
  std::vector<frame> out;
  std::size_t from = 0;
  auto feed = [&](std::size_t to) {
    auto st = dec.feed(std::string_view{stream}.substr(from, to - from));
    BOOST_REQUIRE(st.has_value());
    while (auto f = dec.next())
      out.push_back(std::move(*f));
    from = to;
  };
  for (auto cut : cuts)
    feed(cut);
  feed(stream.size());
  BOOST_REQUIRE(dec.finish().has_value());
  return out;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
          static_cast<char>(v >> 8), static_cast<char>(v)};
}

} // namespace

BOOST_AUTO_TEST_SUITE(protocol_frame)

BOOST_AUTO_TEST_CASE(encoded_frame_is_big_endian_length_then_code_then_body) {
  auto bytes = encode_frame(119, "abc");
  BOOST_REQUIRE(bytes.has_value());
  BOOST_TEST(*bytes == std::string("\x00\x00\x00\x04\x77" "abc", 8));
  auto big = encode_frame(1, std::string(0x10203, 'x'));
  BOOST_REQUIRE(big.has_value());
  BOOST_TEST(big->substr(0, 4) == std::string("\x00\x01\x02\x04", 4));
}

BOOST_AUTO_TEST_CASE(encoder_refuses_a_frame_over_the_limit) {
  BOOST_TEST(encode_frame(1, std::string(9, 'x'), 10).has_value());
  auto too_big = encode_frame(1, std::string(10, 'x'), 10);
  BOOST_REQUIRE(!too_big.has_value());
  BOOST_TEST(too_big.err().code() == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(every_split_of_a_small_stream_yields_the_same_frames) {
  // 18 bytes: every one of the 2^17 ways to cut it into chunks.
  std::vector<frame> frames{{116, ""}, {119, "ab"}, {0, "x"}};
  auto stream = stream_of(frames);
  BOOST_REQUIRE_EQUAL(stream.size(), 18u);
  const std::size_t gaps = stream.size() - 1;
  for (std::uint32_t mask = 0; mask < (1u << gaps); ++mask) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 0; i < gaps; ++i)
      if (mask & (1u << i))
        cuts.push_back(i + 1);
    auto got = decode_cut(stream, cuts);
    BOOST_REQUIRE_MESSAGE(got == frames, "cut mask " << mask);
  }
}

BOOST_AUTO_TEST_CASE(every_two_and_three_chunk_split_of_a_larger_stream) {
  std::vector<frame> frames{{122, std::string(300, 'u')}, {121, "d"},
                            {123, ""}, {118, std::string(70, '\0')}};
  auto stream = stream_of(frames);
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    BOOST_REQUIRE(decode_cut(stream, {i}) == frames);
    for (std::size_t j = i; j <= stream.size(); j += 7)
      BOOST_REQUIRE(decode_cut(stream, {i, j}) == frames);
  }
}

BOOST_AUTO_TEST_CASE(random_chunkings_yield_the_same_frames) {
  test::seeded_rng rng;
  TALLY_SEED_CONTEXT(rng) {
    for (int round = 0; round < 200; ++round) {
      std::vector<frame> frames;
      auto n = rng.uniform(1, 8);
      for (std::uint64_t i = 0; i < n; ++i) {
        frame f;
        f.code = static_cast<std::uint8_t>(rng.uniform(0, 255));
        f.body = std::string(rng.uniform(0, 600),
                             static_cast<char>(rng.uniform(0, 255)));
        frames.push_back(std::move(f));
      }
      auto stream = stream_of(frames);
      std::vector<std::size_t> cuts;
      for (std::size_t at = 0; at < stream.size();) {
        at += rng.uniform(1, 64);
        if (at < stream.size())
          cuts.push_back(at);
      }
      BOOST_REQUIRE(decode_cut(stream, cuts) == frames);
    }
  }
}

BOOST_AUTO_TEST_CASE(zero_length_frame_is_corrupt_and_the_error_sticks) {
  frame_decoder dec;
  auto st = dec.feed(be32(0));
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::corrupt);
  BOOST_TEST(dec.failed());
  auto again = dec.feed(*encode_frame(116, "ok"));
  BOOST_REQUIRE(!again.has_value());
  BOOST_TEST((again.err() == st.err()));
  BOOST_TEST(!dec.next().has_value());
  BOOST_TEST(!dec.finish().has_value());
}

BOOST_AUTO_TEST_CASE(oversized_length_is_refused_before_any_body_byte) {
  frame_decoder dec{1000};
  // Only the length arrives: the error must not wait for the body.
  auto st = dec.feed(be32(1001));
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::invalid_argument);
  BOOST_TEST(st.err().message().find("1001") != std::string::npos);

  frame_decoder dflt;
  auto huge = dflt.feed(be32(0xffffffffu));
  BOOST_REQUIRE(!huge.has_value());
  BOOST_TEST(huge.err().code() == errc::invalid_argument);
  BOOST_TEST(dflt.max_frame_size() == default_max_frame_size);
}

BOOST_AUTO_TEST_CASE(frame_exactly_at_the_limit_is_accepted) {
  frame_decoder dec{10};
  BOOST_REQUIRE(dec.feed(*encode_frame(1, std::string(9, 'y'), 10)).has_value());
  auto f = dec.next();
  BOOST_REQUIRE(f.has_value());
  BOOST_TEST(f->body.size() == 9u);
}

// The admission is asked about each frame in stream order as soon as its
// length is in, before any body byte; its error refuses that frame (sticky)
// and frames before it stay deliverable. An admitted body is reserved at
// its announced size at once.
BOOST_AUTO_TEST_CASE(admission_is_asked_at_each_length_and_its_error_refuses_the_frame) {
  frame_decoder dec{1000};
  std::vector<std::uint32_t> asked;
  dec.set_admission([&](std::uint32_t length) -> status {
    asked.push_back(length);
    if (length > 100)
      return make_error(errc::unavailable, "no room for " + std::to_string(length));
    return {};
  });
  auto ok = *encode_frame(1, std::string(49, 'a'), 1000);
  BOOST_REQUIRE(dec.feed(std::string_view{ok}.substr(0, 5)));
  BOOST_TEST(asked == (std::vector<std::uint32_t>{50}));
  BOOST_TEST(dec.partial_bytes() >= 4u + 1u + 49u); // reserved at once
  BOOST_REQUIRE(dec.feed(std::string_view{ok}.substr(5)));
  auto st = dec.feed(be32(500));
  BOOST_REQUIRE(!st.has_value());
  BOOST_TEST(st.err().code() == errc::unavailable);
  BOOST_TEST(st.err().message() == "no room for 500");
  BOOST_TEST(asked == (std::vector<std::uint32_t>{50, 500}));
  BOOST_TEST(!dec.feed("more").has_value()); // sticky
  auto f = dec.next();
  BOOST_REQUIRE(f.has_value());
  BOOST_TEST(f->body == std::string(49, 'a'));
  BOOST_TEST(!dec.next().has_value());
}

BOOST_AUTO_TEST_CASE(frames_before_a_bad_header_are_still_delivered) {
  frame_decoder dec{100};
  auto bytes = *encode_frame(119, "a") + *encode_frame(121, "b") + be32(500);
  auto st = dec.feed(bytes);
  BOOST_REQUIRE(!st.has_value());
  auto a = dec.next();
  auto b = dec.next();
  BOOST_REQUIRE(a.has_value());
  BOOST_REQUIRE(b.has_value());
  BOOST_TEST(a->code == 119);
  BOOST_TEST(b->code == 121);
  BOOST_TEST(!dec.next().has_value());
}

BOOST_AUTO_TEST_CASE(stream_ending_inside_a_frame_is_truncated) {
  auto bytes = *encode_frame(122, "body!");
  for (std::size_t len = 1; len < bytes.size(); ++len) {
    frame_decoder dec;
    BOOST_REQUIRE(dec.feed(bytes.substr(0, len)).has_value());
    BOOST_TEST(dec.mid_frame());
    BOOST_TEST(!dec.next().has_value());
    auto st = dec.finish();
    BOOST_REQUIRE(!st.has_value());
    BOOST_TEST(st.err().code() == errc::corrupt);
  }
  frame_decoder whole;
  BOOST_REQUIRE(whole.feed(bytes).has_value());
  BOOST_TEST(!whole.mid_frame());
  BOOST_TEST(whole.finish().has_value());
}

BOOST_AUTO_TEST_CASE(code_only_frame_has_an_empty_body) {
  frame_decoder dec;
  BOOST_REQUIRE(dec.feed(be32(1) + "\x77").has_value());
  auto f = dec.next();
  BOOST_REQUIRE(f.has_value());
  BOOST_TEST(f->code == 119);
  BOOST_TEST(f->body.empty());
}

BOOST_AUTO_TEST_SUITE_END()
