// Damaged storage found while a file is in use: clear words instead of a
// bare SIGABRT or SIGBUS (issue 18, "storage that fails loudly").
//
// - LMDB checks its pages with assertions: a zeroed or garbled page makes
//   it call abort() ("mdb.c:5921: Assertion 'IS_LEAF(mp)' failed"). Every
//   environment lmdb_env opens gets on_lmdb_assert() as its assert
//   function (mdb_env_set_assert): it logs which data file is damaged and
//   exits with storage_damaged_exit_code. LMDB cannot go on after one, so
//   the process cannot either; nothing acknowledged is lost by stopping.
// - A data file cut short under a running node makes the next read of its
//   mapping raise SIGBUS. install_storage_fault_handlers() (tallyd calls it
//   once at start) turns that into the same kind of message, naming the
//   file whose mapping holds the faulting address.
// What lmdb_file_check.hpp finds before mapping is an ordinary error
// instead (a refusal to start).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace tally {

/// tallyd's exit code when damaged storage stops it (docs/NODE.md).
constexpr int storage_damaged_exit_code = 3;

/// Installs the SIGBUS handler (idempotent).
void install_storage_fault_handlers();

/// Registers / forgets the mapping [addr, addr + len) of the data file
/// under `dir` (lmdb_env does it), for the SIGBUS handler's message. At
/// most 4096 at once; more are not named.
void register_storage_mapping(const void* addr, std::size_t len, const std::string& dir);
void forget_storage_mapping(const void* addr);

/// Where `file` is mapped in this process (from /proc/self/maps): the start
/// and length of its largest mapping, or {nullptr, 0}. LMDB does not tell
/// (mdb_env_info's me_mapaddr is only set for MDB_FIXEDMAP).
std::pair<const void*, std::size_t> find_file_mapping(const std::string& file);

/// The message the SIGBUS handler writes for a fault at `addr` (also what
/// tests check); names the data file when its mapping is registered.
std::string storage_fault_message(const void* addr);

} // namespace tally
