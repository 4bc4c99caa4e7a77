#include "journal/lmdb_file_check.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

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
                      off_page_size = 40, off_free_root = 80, off_last_pg = 136, off_txnid = 144;

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

// The free-page DB (LMDB's FREE_DBI: key a transaction id, data an ID list
// of the pages that transaction freed, a count then the page numbers) of
// the meta page whose FREE_DBI root is `root`, walked with plain reads so
// that no page past the file's end is ever mapped. Returns, for each page
// number in [first, last], whether that list holds it. Page layout (mdb.c,
// MDB_page and MDB_node, 64-bit): header 16 bytes, flags at 10 (P_BRANCH
// 0x01, P_LEAF 0x02, P_OVERFLOW 0x04), mp_lower at 12, an overflow page's
// page count at 12; node offsets (uint16) from 16; a node is lo, hi, flags,
// ksize (uint16 each), then the key and the data; a branch node's child is
// lo | hi << 16 | flags << 32; a leaf node's data size is lo | hi << 16,
// and with F_BIGDATA (0x01) its data is the number of the overflow page
// whose bytes from offset 16 hold it.
constexpr std::uint64_t no_page = ~std::uint64_t{0};
constexpr std::uint16_t p_branch = 0x01, p_leaf = 0x02, p_overflow = 0x04, f_bigdata = 0x01;
constexpr std::size_t page_header = 16, node_header = 8;

expected<std::vector<bool>> free_among(int fd, std::uint64_t file_bytes, std::uint32_t psize,
                                       std::uint64_t root, std::uint64_t first,
                                       std::uint64_t last) {
  std::vector<bool> found(last - first + 1, false);
  if (root == no_page)
    return found; // no page freed in any kept transaction
  const std::uint64_t pages_in_file = file_bytes / psize;
  std::vector<unsigned char> page(psize);
  std::vector<std::uint64_t> todo{root};
  std::uint64_t visited = 0;
  auto read_page = [&](std::uint64_t pgno) {
    return pgno < pages_in_file && read_at(fd, page.data(), psize, pgno * psize);
  };
  auto note = [&](const unsigned char* ids, std::uint64_t bytes) -> bool {
    if (bytes < 8)
      return false;
    const auto n = load<std::uint64_t>(ids);
    if (n > (bytes - 8) / 8)
      return false;
    for (std::uint64_t i = 1; i <= n; ++i) {
      const auto pg = load<std::uint64_t>(ids + 8 * i);
      if (pg >= first && pg <= last)
        found[pg - first] = true;
    }
    return true;
  };
  while (!todo.empty()) {
    const auto pgno = todo.back();
    todo.pop_back();
    if (++visited > pages_in_file || !read_page(pgno))
      return make_error(errc::corrupt, "free-page list page " + std::to_string(pgno)
                                         + " is past the file's end or unreadable");
    const auto flags = load<std::uint16_t>(page.data() + 10);
    const auto lower = load<std::uint16_t>(page.data() + 12);
    if (!(flags & (p_branch | p_leaf)) || lower < page_header || lower > psize)
      return make_error(errc::corrupt, "free-page list page " + std::to_string(pgno)
                                         + " is not a B-tree page");
    const std::size_t keys = (lower - page_header) / 2;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> big; // (overflow page, data size)
    for (std::size_t i = 0; i < keys; ++i) {
      const auto at = load<std::uint16_t>(page.data() + page_header + 2 * i);
      if (at + node_header > psize)
        return make_error(errc::corrupt, "free-page list page " + std::to_string(pgno)
                                           + ": a node past the page's end");
      const unsigned char* node = page.data() + at;
      const std::uint64_t lo = load<std::uint16_t>(node), hi = load<std::uint16_t>(node + 2),
                          nflags = load<std::uint16_t>(node + 4),
                          ksize = load<std::uint16_t>(node + 6);
      if (flags & p_branch) {
        todo.push_back(lo | (hi << 16) | (nflags << 32));
        continue;
      }
      const std::uint64_t dsize = lo | (hi << 16);
      const std::size_t data_at = at + node_header + ksize;
      if (nflags & f_bigdata) {
        if (data_at + 8 > psize)
          return make_error(errc::corrupt, "free-page list: a node past its page's end");
        big.emplace_back(load<std::uint64_t>(page.data() + data_at), dsize);
        continue;
      }
      if (data_at + dsize > psize || !note(page.data() + data_at, dsize))
        return make_error(errc::corrupt, "free-page list page " + std::to_string(pgno)
                                           + ": a page list past the page's end");
    }
    for (const auto& [ov, dsize] : big) { // read after this page's nodes (one buffer)
      if (ov >= pages_in_file || (ov * psize + page_header + dsize) > file_bytes)
        return make_error(errc::corrupt, "free-page list overflow page "
                                           + std::to_string(ov) + " is past the file's end");
      std::vector<unsigned char> data(dsize);
      if (!read_at(fd, page.data(), psize, ov * psize)
          || !(load<std::uint16_t>(page.data() + 10) & p_overflow)
          || !read_at(fd, data.data(), dsize, ov * psize + page_header) || !note(data.data(), dsize))
        return make_error(errc::corrupt, "free-page list overflow page " + std::to_string(ov)
                                           + " is unreadable");
    }
  }
  return found;
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
  meta m1 = parse_meta(second);
  if (!m1.valid || m1.page_size != m0.page_size)
    ::close(fd);
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
  if (out.file_bytes >= out.needed_bytes()) {
    ::close(fd);
    return out;
  }
  // Shorter than the newest meta page's last page: LMDB never writes a
  // "loose" page (one a transaction allocated and freed again itself; mdb.c,
  // mdb_page_flush: "Don't flush this page yet") and lists it as free, so a
  // page at the end can be in no file yet, harmlessly: LMDB writes a free
  // page before it reads it. The file is damaged only when a missing page
  // is not free (seen after a kill -9 in a chaos run of stop 32: 4,980,736
  // bytes where the header's last page asked 4,984,832, and the node could
  // not start again).
  const std::uint64_t first_missing = out.file_bytes / out.page_size;
  // Loose pages are a transaction's few; a header counting far more pages
  // than the file holds is damage, not worth a walk (nor an allocation of
  // one flag per page it names).
  constexpr std::uint64_t max_unwritten_pages = 1u << 16;
  if (out.last_page + 1 - first_missing > max_unwritten_pages) {
    ::close(fd);
    return damaged("truncated: " + std::to_string(out.file_bytes) + " bytes, but its newest header "
                   "(transaction " + std::to_string(out.txn_id) + ") uses "
                   + std::to_string(out.needed_bytes()) + " bytes");
  }
  auto free = free_among(fd, out.file_bytes, out.page_size,
                         load<std::uint64_t>((m1.txn_id > m0.txn_id ? second : first) + off_free_root),
                         first_missing, out.last_page);
  ::close(fd);
  const bool all_free = free && std::all_of(free->begin(), free->end(), [](bool f) { return f; });
  if (!all_free)
    return damaged("truncated: " + std::to_string(out.file_bytes) + " bytes, but its newest header "
                   "(transaction " + std::to_string(out.txn_id) + ") uses "
                   + std::to_string(out.needed_bytes()) + " bytes"
                   + (free ? std::string{} : " (" + free.err().message() + ")"));
  out.unwritten_free_pages = out.last_page + 1 - first_missing;
  return out;
}

} // namespace tally
