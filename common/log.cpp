#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <unistd.h>

namespace tally {

namespace {
std::atomic<log_level> threshold{log_level::info};
} // namespace

void set_log_level(log_level level) { threshold = level; }
log_level current_log_level() { return threshold; }

void log_line(log_level level, const std::string& text) {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  static constexpr const char* names[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
  char head[64];
  std::snprintf(head, sizeof head, "%s.%03dZ %s ", stamp, static_cast<int>(ms),
                names[static_cast<int>(level)]);
  std::string line = head + text + "\n";
  // One write(2) per line, so lines from several threads never interleave.
  auto rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

} // namespace tally
