// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78; RFC 3720
// appendix B.4), the checksum of every journal record and checkpoint entry
// (docs/FORMAT.md, "Journal record"). Chosen over CRC-32 for its better error
// detection on the short messages a journal holds and because it is the
// checksum leveldb and RocksDB put in their log records.
//
// Software, table-driven (slicing-by-8): no CPU feature detection, the same
// result on every machine. Pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tally {

/// CRC-32C of `n` bytes at `data`, continuing from `crc` (the value returned
/// for the bytes before them; 0 to start). crc32c_extend(crc32c(a), b) ==
/// crc32c(a + b).
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data,
                            std::size_t n) noexcept;

/// CRC-32C of `bytes`. crc32c("123456789") == 0xE3069283.
inline std::uint32_t crc32c(std::string_view bytes) noexcept {
  return crc32c_extend(0, bytes.data(), bytes.size());
}

} // namespace tally
