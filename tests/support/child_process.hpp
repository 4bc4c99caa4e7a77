// A child process of a test (a CLI or tallyd run that stops by itself):
// its stdout and stderr go to files, waits are bounded. Used by
// tests/client/cli_test.cpp and tests/cluster/.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tally::test {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A started process whose stdout and stderr go to files in `dir`; killed
/// if still running when destroyed.
struct child_process {
  pid_t pid = -1;
  std::filesystem::path out, err;

  /// `env` entries NAME=VALUE override the test's environment.
  child_process(const std::string& binary, const std::vector<std::string>& args,
                const std::filesystem::path& dir, const std::vector<std::string>& env = {}) {
    out = dir / "stdout";
    err = dir / "stderr";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> all{binary};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e)
      env_strings.emplace_back(*e);
    for (const auto& e : env) { // override by name
      auto name = e.substr(0, e.find('=') + 1);
      for (auto& s : env_strings)
        if (s.rfind(name, 0) == 0)
          s.clear();
      env_strings.push_back(e);
    }
    std::vector<char*> envp;
    for (auto& e : env_strings)
      if (!e.empty())
        envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), envp.data()) != 0)
      pid = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~child_process() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  bool started() const noexcept { return pid > 0; }

  /// True once the process has exited (sets `code`), without waiting.
  bool exited(int& code) {
    int status = 0;
    if (pid <= 0 || ::waitpid(pid, &status, WNOHANG) != pid)
      return false;
    pid = -1;
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  /// The exit code; -1 when it did not exit within `limit` (it is then
  /// killed by the destructor).
  int wait(std::chrono::milliseconds limit = std::chrono::seconds{20}) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    int code = -1;
    while (!exited(code)) {
      if (std::chrono::steady_clock::now() > deadline)
        return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return code;
  }

  /// Waits until stdout contains `text`; false after `limit`.
  bool wait_for_stdout(const std::string& text,
                       std::chrono::milliseconds limit = std::chrono::seconds{10}) {
    return wait_for_text(out, text, limit);
  }

  /// Waits until stderr contains `text`; false after `limit`.
  bool wait_for_stderr(const std::string& text,
                       std::chrono::milliseconds limit = std::chrono::seconds{10}) {
    return wait_for_text(err, text, limit);
  }

  static bool wait_for_text(const std::filesystem::path& file, const std::string& text,
                            std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (slurp(file).find(text) != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    return false;
  }
};

} // namespace tally::test
