// Checks of an LMDB data file *before* LMDB maps it (issue 18, "storage
// that fails loudly"). LMDB trusts its file: a file cut short is mapped
// anyway and the first read past its end kills the process with SIGBUS; an
// emptied or deleted file is silently re-created empty, so a node serves 0
// for every key it held. These checks read the file's two meta pages with
// plain reads and refuse, naming the file, what LMDB would not notice.
//
// The meta page layout is LMDB 0.9's (mdb.c, struct MDB_page and struct
// MDB_meta, on a 64-bit build): a 16-byte page header whose flags word
// (offset 10) has P_META (0x08), then mm_magic 0xBEEFC0DE (offset 16),
// mm_version 1 (20), mm_mapsize (32), the free-page DB's MDB_db whose
// md_pad holds the page size (40), mm_last_pg (136) and mm_txnid (144).
// LMDB uses the meta page with the larger txnid; the file must hold pages
// 0..mm_last_pg of it.
#pragma once

#include <cstdint>
#include <string>

#include "common/expected.hpp"

namespace tally {

struct lmdb_file_report {
  bool exists = false;          // false: no data file (or an empty one) yet
  std::uint64_t file_bytes = 0;
  std::uint32_t page_size = 0;
  std::uint64_t last_page = 0;  // of the newest meta page
  std::uint64_t txn_id = 0;     // of the newest meta page
  std::uint64_t map_size = 0;   // as recorded in the newest meta page
  // Pages at the end that the newest meta page counts but the file does
  // not hold yet, all of them free (never written: LMDB's loose pages).
  std::uint64_t unwritten_free_pages = 0;
  std::uint64_t needed_bytes() const noexcept { return (last_page + 1) * page_size; }
};

/// The file name of an LMDB environment's data inside its directory.
constexpr const char* lmdb_data_file = "data.mdb";

/// Checks `<dir>/data.mdb`. With `must_exist` false, a missing or empty file
/// is fine (exists = false: LMDB will create it); with `must_exist` true
/// (the node's manifest says it holds this data) it is errc::corrupt.
/// errc::corrupt, naming the file, for a file shorter than two pages, a
/// meta page without LMDB's magic or version, or a file shorter than its
/// newest meta page says (truncated) unless every page it lacks is in that
/// meta page's free-page list (unwritten_free_pages); errc::io_error when
/// it cannot be read.
expected<lmdb_file_report> check_lmdb_file(const std::string& dir, bool must_exist);

} // namespace tally
