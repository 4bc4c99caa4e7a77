// A small logger for the node (CAF's logger prints nothing in this build):
// one line per call on stderr, "2026-11-22T04:50:01.123Z INFO  message".
// Thread-safe: each line goes out in one write.
#pragma once

#include <sstream>
#include <string>

namespace tally {

enum class log_level { debug, info, warn, error };

/// Lines below this level are dropped (default info).
void set_log_level(log_level level);
log_level current_log_level();
void log_line(log_level level, const std::string& text);

template <class... Ts>
void log(log_level level, const Ts&... xs) {
  if (level < current_log_level())
    return;
  std::ostringstream os;
  (os << ... << xs);
  log_line(level, os.str());
}

} // namespace tally
