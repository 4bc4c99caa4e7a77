#include "journal/file_sync.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace tally {

error io_failure(const std::string& what, const std::string& path, int err) {
  return make_error(errc::io_error, what + " " + path + ": " + std::strerror(err));
}

status sync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
  if (fd < 0)
    return io_failure("cannot open", path, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    return io_failure("cannot sync", path, err);
  return {};
}

} // namespace tally
