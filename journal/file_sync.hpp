// fsync of one file or folder, with an error that names it: what makes a
// rename or a new file durable (the manifest, handoff folders).
#pragma once

#include <string>

#include "common/expected.hpp"

namespace tally {

/// errc::io_error "<what> <path>: <strerror(err)>".
error io_failure(const std::string& what, const std::string& path, int err);

/// Opens `path` (a folder when `directory`) and fsyncs it. errc::io_error.
status sync_path(const std::string& path, bool directory);

} // namespace tally
