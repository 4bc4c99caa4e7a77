// A Cereal input archive that reads what cereal::PortableBinaryOutputArchive
// wrote, from bytes in memory, and refuses any length larger than the bytes
// left before allocating for it.
//
// Why: Cereal's own loads of strings and vectors resize to the length the
// input claims, then read. A message of a hundred bytes that claims a 20 GB
// string makes PortableBinaryInputArchive allocate and zero 20 GB before the
// read fails (found by fuzz_wire in its first second, docs/RELIABILITY.md
// "Fuzzers"). Every element of Tally's encodings takes at least one byte, so
// a length above the bytes left cannot be valid: this archive throws
// cereal::Exception for it instead, which the decoders turn into
// errc::corrupt.
//
// The layout is exactly the portable binary one: a first byte saying whether
// the writer was little-endian, fixed-size integers in the writer's order,
// bools as one byte (0 or 1; anything else is refused), lengths (size tags) as 64-bit integers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>

namespace tally {

class bounded_input_archive
    : public cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision> {
public:
  /// Reads `bytes`, which must outlive the archive. Throws cereal::Exception
  /// when the endianness byte is missing.
  explicit bounded_input_archive(std::string_view bytes)
      : cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision>(this),
        bytes_(bytes) {
    std::uint8_t writer_little_endian = 0;
    (*this)(writer_little_endian);
    swap_ = (writer_little_endian != 0) != cereal::portable_binary_detail::is_little_endian();
  }

  /// Bytes not read yet.
  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }

  template <std::streamsize DataSize>
  void load_binary(void* data, std::size_t size) {
    if (size > remaining())
      throw cereal::Exception("truncated: " + std::to_string(size) + " bytes wanted, "
                              + std::to_string(remaining()) + " left");
    if (size == 0)
      return; // an empty string or vector: its data() may be null
    std::memcpy(data, bytes_.data() + pos_, size);
    pos_ += size;
    if (swap_) {
      auto* p = static_cast<std::uint8_t*>(data);
      for (std::size_t i = 0; i < size; i += DataSize)
        cereal::portable_binary_detail::swap_bytes<DataSize>(p + i);
    }
  }

  /// A length read from the input: at most the bytes left (each element
  /// takes at least one byte).
  void check_length(std::uint64_t n) const {
    if (n > remaining())
      throw cereal::Exception("a length of " + std::to_string(n) + " exceeds the "
                              + std::to_string(remaining()) + " bytes left");
  }

private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
  bool swap_ = false;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>
CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& ar, T& t) {
  ar.template load_binary<sizeof(T)>(std::addressof(t), sizeof(t));
}

/// A bool is one byte, 0 or 1: any other byte is refused (copying it into a
/// bool would be undefined behaviour; Cereal's optional<T> reads one).
inline void CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& ar, bool& b) {
  std::uint8_t byte = 0;
  ar.template load_binary<1>(&byte, 1);
  if (byte > 1)
    throw cereal::Exception("a bool of value " + std::to_string(byte));
  b = byte != 0;
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  ar.check_length(static_cast<std::uint64_t>(t.size));
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& ar, cereal::BinaryData<T>& bd) {
  using element = std::remove_pointer_t<T>;
  ar.template load_binary<sizeof(element)>(bd.data, static_cast<std::size_t>(bd.size));
}

} // namespace tally

CEREAL_REGISTER_ARCHIVE(tally::bounded_input_archive)

namespace cereal::traits::detail {
// What the archive reads is what PortableBinaryOutputArchive writes (Cereal
// pairs archives for its minimal-serialization checks).
template <>
struct get_output_from_input<tally::bounded_input_archive> {
  using type = cereal::PortableBinaryOutputArchive;
};
} // namespace cereal::traits::detail
