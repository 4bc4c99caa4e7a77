// Internal: the one place where the clock types meet Cereal's byte streams.
// Every clock encoding is a Cereal portable binary archive, always written
// little-endian so that the bytes are the same on every host, holding exactly
// one versioned object (CEREAL_CLASS_VERSION). Decoding untrusted bytes turns
// every failure (truncation, an unknown version, a value the type rejects,
// trailing bytes) into errc::corrupt; no exception leaves this file.
#pragma once

#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>

#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.hpp"
#include "common/expected.hpp"

namespace tally::detail {

/// The first byte of every clock encoding: Cereal's portable-binary
/// endianness flag, 1 = little-endian. Clocks are always written little-endian
/// (see encode_object), so any other first byte is not ours.
constexpr unsigned char clock_codec_little_endian = 1;

/// A read-only stream buffer over borrowed bytes, so decoding never copies.
class view_streambuf : public std::streambuf {
public:
  explicit view_streambuf(std::string_view bytes) {
    // std::streambuf wants char*; only the get area is used, never written.
    char* first = const_cast<char*>(bytes.data());
    setg(first, first, first + bytes.size());
  }
  std::streamsize remaining() const { return egptr() - gptr(); }
};

/// Writes `value` (a type with versioned Cereal save/load) as one archive.
template <class T>
std::string encode_object(const T& value) {
  std::ostringstream os(std::ios::binary);
  {
    cereal::PortableBinaryOutputArchive ar(
      os, cereal::PortableBinaryOutputArchive::Options::LittleEndian());
    ar(value);
  }
  return os.str();
}

/// Reads exactly one `T` from `bytes` into `out`. Returns errc::corrupt, with
/// `what` ("vector clock") naming the type in the message, when the bytes are
/// not a complete, valid encoding with nothing after it. `out` is only
/// assigned on success.
template <class T>
status decode_object(std::string_view bytes, T& out, const char* what) {
  if (bytes.empty())
    return make_error(errc::corrupt, std::string{"The "} + what
                                       + " encoding is empty.");
  if (static_cast<unsigned char>(bytes.front()) != clock_codec_little_endian)
    return make_error(errc::corrupt,
                      std::string{"The "} + what
                        + " encoding does not start with the little-endian"
                          " marker byte; it is not a Tally clock.");
  view_streambuf buf{bytes};
  std::istream is(&buf);
  T value = out;
  try {
    cereal::PortableBinaryInputArchive ar(is);
    ar(value);
  } catch (const cereal::Exception& e) {
    // Cereal reports truncation this way, and the clock types' load()
    // functions report unknown versions and invalid contents this way.
    return make_error(errc::corrupt, std::string{"The "} + what
                                       + " encoding is invalid: " + e.what());
  }
  if (buf.remaining() != 0)
    return make_error(errc::corrupt,
                      std::string{"The "} + what + " encoding has "
                        + std::to_string(buf.remaining())
                        + " unexpected bytes after its end.");
  out = std::move(value);
  return {};
}

} // namespace tally::detail
