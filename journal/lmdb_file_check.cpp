#include "journal/lmdb_file_check.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tally {

namespace {

static_assert(sizeof(void*) == 8, "the meta page offsets below are LMDB's on a 64-bit build");

constexpr std::uint32_t lmdb_magic = 0xBEEFC0DEu;
constexpr std::uint32_t lmdb_data_version = 1;
constexpr std::uint16_t page_flag_meta = 0x08;
constexpr std::size_t meta_bytes = 152; // through mm_txnid
// Offsets inside a meta page (see the header comment).
constexpr std::size_t off_flags = 10, off_magic = 16, off_version = 20, off_mapsize = 32,
                      off_page_size = 40, off_last_pg = 136, off_txnid = 144;

template <class T>
T load(const unsigned char* p) {
  T v{};
  std::memcpy(&v, p, sizeof v); // little-endian host, as the file
  return v;
}

struct meta {
  bool valid = false;
  std::string why; // when not valid
  std::uint32_t page_size = 0;
  std::uint64_t map_size = 0, last_page = 0, txn_id = 0;
};

meta parse_meta(const unsigned char* p) {
  meta m;
  if (!(load<std::uint16_t>(p + off_flags) & page_flag_meta)) {
    m.why = "no meta page flag";
  } else if (load<std::uint32_t>(p + off_magic) != lmdb_magic) {
    m.why = "no LMDB magic number";
  } else if (load<std::uint32_t>(p + off_version) != lmdb_data_version) {
    m.why = "LMDB data version " + std::to_string(load<std::uint32_t>(p + off_version))
            + ", expected 1";
  } else {
    m.page_size = load<std::uint32_t>(p + off_page_size);
    m.map_size = load<std::uint64_t>(p + off_mapsize);
    m.last_page = load<std::uint64_t>(p + off_last_pg);
    m.txn_id = load<std::uint64_t>(p + off_txnid);
    if (m.page_size < 512 || m.page_size > (1u << 16) || (m.page_size & (m.page_size - 1)))
      m.why = "page size " + std::to_string(m.page_size) + " is not LMDB's";
    else if (m.last_page < 1 || m.last_page > (std::uint64_t{1} << 48))
      m.why = "last page " + std::to_string(m.last_page) + " is out of range";
    else
      m.valid = true;
  }
  return m;
}

// Reads exactly n bytes at offset; false on a short read.
bool read_at(int fd, unsigned char* buf, std::size_t n, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    auto r = ::pread(fd, buf + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

} // namespace

expected<lmdb_file_report> check_lmdb_file(const std::string& dir, bool must_exist) {
  const std::string file = (std::filesystem::path{dir} / lmdb_data_file).string();
  auto damaged = [&](const std::string& why) {
    return make_error(errc::corrupt, file + ": " + why);
  };
  lmdb_file_report out;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return make_error(errc::io_error, "cannot stat " + file + ": " + std::strerror(errno));
    if (must_exist)
      return damaged("missing (deleted?): this node holds the partition's data here");
    return out;
  }
  out.file_bytes = static_cast<std::uint64_t>(st.st_size);
  if (out.file_bytes == 0) {
    if (must_exist)
      return damaged("empty (0 bytes): this node holds the partition's data here");
    return out;
  }
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error, "cannot open " + file + ": " + std::strerror(errno));
  unsigned char first[meta_bytes];
  if (!read_at(fd, first, sizeof first, 0)) {
    ::close(fd);
    return damaged(std::to_string(out.file_bytes) + " bytes: too short for LMDB's headers");
  }
  meta m0 = parse_meta(first);
  if (!m0.valid) {
    ::close(fd);
    return damaged("first meta page damaged (" + m0.why + ")");
  }
  unsigned char second[meta_bytes];
  if (out.file_bytes < 2ull * m0.page_size
      || !read_at(fd, second, sizeof second, m0.page_size)) {
    ::close(fd);
    return damaged(std::to_string(out.file_bytes) + " bytes: too short for LMDB's two meta pages of "
                   + std::to_string(m0.page_size) + " bytes (truncated?)");
  }
  ::close(fd);
  meta m1 = parse_meta(second);
  if (!m1.valid)
    return damaged("second meta page damaged (" + m1.why + ")");
  if (m1.page_size != m0.page_size)
    return damaged("the meta pages disagree on the page size");
  const meta& newest = m1.txn_id > m0.txn_id ? m1 : m0;
  out.exists = true;
  out.page_size = newest.page_size;
  out.last_page = newest.last_page;
  out.txn_id = newest.txn_id;
  out.map_size = newest.map_size;
  if (out.file_bytes < out.needed_bytes())
    return damaged("truncated: " + std::to_string(out.file_bytes) + " bytes, but its newest header "
                   "(transaction " + std::to_string(out.txn_id) + ") uses "
                   + std::to_string(out.needed_bytes()) + " bytes");
  return out;
}

} // namespace tally
