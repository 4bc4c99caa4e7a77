#include "journal/storage_faults.hpp"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <unistd.h>

namespace tally {

namespace {

// A fixed table the signal handler can read without locks or allocation.
struct mapping_slot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  char dir[240] = {};
};
constexpr std::size_t max_mappings = 4096;
mapping_slot mappings[max_mappings];
std::mutex mappings_mu; // writers only

// Async-signal-safe: appends `s` to buf at *at (bounded).
void put(char* buf, std::size_t cap, std::size_t* at, const char* s) {
  while (*s && *at + 1 < cap)
    buf[(*at)++] = *s++;
}

std::size_t format_fault(const void* addr, char* buf, std::size_t cap) {
  auto a = reinterpret_cast<std::uintptr_t>(addr);
  const char* dir = nullptr;
  for (auto& m : mappings) {
    auto b = m.begin.load(std::memory_order_acquire);
    if (b != 0 && a >= b && a < m.end.load(std::memory_order_acquire)) {
      dir = m.dir;
      break;
    }
  }
  std::size_t at = 0;
  put(buf, cap, &at, "tallyd: storage damaged: ");
  if (dir) {
    put(buf, cap, &at, "the data file in ");
    put(buf, cap, &at, dir);
    put(buf, cap, &at, " is shorter than LMDB's map of it");
  } else {
    put(buf, cap, &at, "a memory-mapped file is shorter than its map");
  }
  put(buf, cap, &at, " (truncated while in use, or a disk read error: SIGBUS); stopping. "
                     "Restore the partition's data, then start again (docs/NODE.md, "
                     "\"Damaged storage\").\n");
  buf[at] = '\0';
  return at;
}

void on_sigbus(int, siginfo_t* info, void*) {
  char buf[768];
  auto n = format_fault(info ? info->si_addr : nullptr, buf, sizeof buf);
  [[maybe_unused]] auto w = ::write(STDERR_FILENO, buf, n);
  ::_exit(storage_damaged_exit_code);
}

} // namespace

void install_storage_fault_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

void register_storage_mapping(const void* addr, std::size_t len, const std::string& dir) {
  if (!addr || len == 0)
    return;
  std::lock_guard<std::mutex> g{mappings_mu};
  for (auto& m : mappings) {
    if (m.begin.load(std::memory_order_relaxed) != 0)
      continue;
    auto n = std::min(dir.size(), sizeof m.dir - 1);
    std::memcpy(m.dir, dir.data(), n);
    m.dir[n] = '\0';
    auto b = reinterpret_cast<std::uintptr_t>(addr);
    m.end.store(b + len, std::memory_order_release);
    m.begin.store(b, std::memory_order_release);
    return;
  }
}

void forget_storage_mapping(const void* addr) {
  std::lock_guard<std::mutex> g{mappings_mu};
  auto b = reinterpret_cast<std::uintptr_t>(addr);
  for (auto& m : mappings)
    if (b != 0 && m.begin.load(std::memory_order_relaxed) == b) {
      m.begin.store(0, std::memory_order_release);
      m.end.store(0, std::memory_order_release);
    }
}

std::pair<const void*, std::size_t> find_file_mapping(const std::string& file) {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(file, ec).string();
  std::ifstream maps{"/proc/self/maps"};
  std::string line;
  std::pair<const void*, std::size_t> best{nullptr, 0};
  // "start-end perms offset dev inode   path"
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos || line.compare(slash, std::string::npos, canonical) != 0)
      continue;
    std::uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &begin, &end) != 2 || end <= begin)
      continue;
    if (end - begin > best.second)
      best = {reinterpret_cast<const void*>(begin), end - begin};
  }
  return best;
}

std::string storage_fault_message(const void* addr) {
  char buf[768];
  auto n = format_fault(addr, buf, sizeof buf);
  return std::string{buf, n};
}

} // namespace tally
