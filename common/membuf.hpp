// Stream buffers over memory, so Cereal's stream-based archives read and
// write bytes (journal records, checkpoint entries, node-to-node messages)
// without copying them through std::stringstream.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>
#include <string_view>

namespace tally::detail {

/// Appends everything written to it to a std::string.
class string_sink final : public std::streambuf {
public:
  explicit string_sink(std::string& out) : out_(out) {}

protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out_.append(s, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof()))
      out_.push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }

private:
  std::string& out_;
};

/// Reads a byte range it does not own; the range must outlive it.
class view_source final : public std::streambuf {
public:
  explicit view_source(std::string_view bytes) {
    auto* p = const_cast<char*>(bytes.data()); // never written through
    setg(p, p, p + bytes.size());
  }
  /// Bytes not read yet.
  std::size_t remaining() const noexcept {
    return static_cast<std::size_t>(egptr() - gptr());
  }
};

} // namespace tally::detail
