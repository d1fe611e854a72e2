#include "common/process/process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace spotlight::process {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the child reports through the error pipe when it fails before exec.
enum class Stage : int { kParent = 0, kAffinity = 1, kWorkingDir = 2, kRedirect = 3, kExec = 4 };
struct ChildFailure {
  Stage stage;
  int error;
};

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::kAffinity:
      return "setting its CPU set (sched_setaffinity)";
    case Stage::kWorkingDir:
      return "changing to its working directory";
    case Stage::kRedirect:
      return "redirecting its output";
    case Stage::kExec:
      return "exec";
    default:
      return "spawning";
  }
}

bool is_executable(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
}

// argv[0] as the program to exec: itself when it names a path, else the first PATH hit.
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, colon - start);
    std::string candidate = dir.empty() ? std::string(".") : dir;
    candidate += '/';
    candidate += name;
    if (is_executable(candidate)) return candidate;
    start = colon + 1;
  }
  throw ProcessError("cannot start " + name + ": not found in PATH");
}

std::vector<std::string> child_environment(const ProcessOptions& o) {
  std::vector<std::string> out;
  if (o.inherit_env) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      const std::string entry(*e);
      const auto eq = entry.find('=');
      if (eq != std::string::npos && o.env.count(entry.substr(0, eq)) != 0) continue;
      out.push_back(entry);
    }
  }
  for (const auto& [key, value] : o.env) {
    std::string entry = key;
    entry += '=';
    entry += value;
    out.push_back(std::move(entry));
  }
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& words) {
  std::vector<char*> out;
  out.reserve(words.size() + 1);
  for (auto& w : words)
    out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

// Only async-signal-safe calls: the parent may have other threads (holding malloc's lock).
[[noreturn]] void child_fail(int pipe_fd, Stage stage) {
  const ChildFailure failure{stage, errno};
  [[maybe_unused]] const ssize_t n = ::write(pipe_fd, &failure, sizeof(failure));
  ::_exit(127);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A connected pair of Unix stream sockets, both close-on-exec: [0] the parent's, [1] the child's.
// Throws ProcessError naming the program.
void socket_pair(int fds[2], const std::string& program) {
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw ProcessError("cannot start " + program + ": socketpair: " + std::strerror(errno));
  }
}

CpuTimes times_of(const struct rusage& usage) {
  CpuTimes t;
  t.user_seconds = static_cast<double>(usage.ru_utime.tv_sec) + usage.ru_utime.tv_usec / 1e6;
  t.system_seconds = static_cast<double>(usage.ru_stime.tv_sec) + usage.ru_stime.tv_usec / 1e6;
  return t;
}

// Every descriptor the child needs, closed again in the parent whatever happens.
struct Descriptors {
  int log = -1, null = -1, report[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1};
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    for (int* fd : {&log, &null, &report[0], &report[1], &in[0], &in[1], &out[0], &out[1]})
      close_fd(*fd);
  }
};

// The log file (appended to), the stdin/stdout socket pairs asked for, /dev/null and the report
// pipe through which the child says why it failed before exec. Throws ProcessError.
void open_descriptors(const ProcessOptions& o, Descriptors& fds) {
  const std::string& name = o.argv[0];
  if (!o.log.empty()) {
    std::error_code ec;
    if (o.log.has_parent_path()) std::filesystem::create_directories(o.log.parent_path(), ec);
    fds.log = ::open(o.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fds.log < 0) {
      throw ProcessError("cannot start " + name + ": log file " + o.log.string() + ": " +
                         std::strerror(errno));
    }
  }
  if (o.pipe_stdin) socket_pair(fds.in, name);
  if (o.pipe_stdout) socket_pair(fds.out, name);
  fds.null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fds.null < 0 || ::pipe2(fds.report, O_CLOEXEC) != 0) {
    throw ProcessError("cannot start " + name + ": " + std::strerror(errno));
  }
}

// What the child does between fork and exec, all prepared before the fork (only async-signal-safe
// calls happen in the child).
struct ChildSetup {
  const char* program;
  char* const* argv;
  char* const* envp;
  std::string working_dir;
  bool pin;
  bool die_with_parent;
  pid_t parent;
  int in, out, err;  // the child's stdin, stdout, stderr (-1: inherited)
  int report;        // the report pipe's write end
  cpu_set_t cpus{};
};

[[noreturn]] void exec_child(const ChildSetup& c) {
  if (c.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != c.parent) ::_exit(127);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s)
    ::sigaction(s, &dfl, nullptr);  // fails harmlessly for SIGKILL, SIGSTOP, RT internals
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (c.pin && ::sched_setaffinity(0, sizeof(c.cpus), &c.cpus) != 0) {
    child_fail(c.report, Stage::kAffinity);
  }
  if (!c.working_dir.empty() && ::chdir(c.working_dir.c_str()) != 0) {
    child_fail(c.report, Stage::kWorkingDir);
  }
  if (::dup2(c.in, STDIN_FILENO) < 0) child_fail(c.report, Stage::kRedirect);
  if (c.out >= 0 && ::dup2(c.out, STDOUT_FILENO) < 0) child_fail(c.report, Stage::kRedirect);
  if (c.err >= 0 && ::dup2(c.err, STDERR_FILENO) < 0) child_fail(c.report, Stage::kRedirect);
  // Everything above 2 closes at exec (the report pipe already does): no inherited sockets.
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(c.program, c.argv, c.envp);
  child_fail(c.report, Stage::kExec);
}

// Why the child failed before exec (reaped), or nullopt when it exec'd: the report pipe closes
// at exec without a word.
std::optional<ChildFailure> exec_failure(pid_t pid, int report) {
  ChildFailure failure{};
  ssize_t n = 0;
  do {
    n = ::read(report, &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(failure))) return std::nullopt;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return failure;
}

}  // namespace

void ProcessOptions::validate() const {
  if (argv.empty() || argv[0].empty()) {
    throw std::invalid_argument("ProcessOptions.argv: must name a program");
  }
  for (const auto& [key, value] : env) {
    if (key.empty() || key.find('=') != std::string::npos) {
      throw std::invalid_argument("ProcessOptions.env: bad variable name '" + key + "'");
    }
  }
  if (pipe_stderr && !pipe_stdout) {
    throw std::invalid_argument("ProcessOptions.pipe_stderr: needs pipe_stdout");
  }
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      throw std::invalid_argument("ProcessOptions.cpus: " + std::to_string(cpu) +
                                  " is not a CPU number");
    }
  }
}

std::string ExitStatus::describe() const {
  if (signal == 0) return "exit " + std::to_string(code);
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

Process::Process(ProcessOptions options) : options_(std::move(options)) {
  options_.validate();
  const std::string program = resolve_program(options_.argv[0]);
  std::vector<std::string> argv_words = options_.argv;
  std::vector<std::string> env_words = child_environment(options_);
  std::vector<char*> argv = pointers(argv_words);
  std::vector<char*> envp = pointers(env_words);
  Descriptors fds;
  open_descriptors(options_, fds);
  ChildSetup setup{.program = program.c_str(),
                   .argv = argv.data(),
                   .envp = envp.data(),
                   .working_dir = options_.working_dir.string(),
                   .pin = !options_.cpus.empty(),
                   .die_with_parent = options_.die_with_parent,
                   .parent = ::getpid(),
                   // The child's stdin, stdout and stderr (-1: inherited).
                   .in = options_.pipe_stdin ? fds.in[1] : fds.null,
                   .out = options_.pipe_stdout ? fds.out[1] : fds.log,
                   .err = options_.pipe_stderr ? fds.out[1] : fds.log,
                   .report = fds.report[1]};
  CPU_ZERO(&setup.cpus);
  for (int cpu : options_.cpus)
    CPU_SET(cpu, &setup.cpus);

  const pid_t pid = ::fork();
  if (pid == 0) exec_child(setup);
  const int fork_errno = errno;
  close_fd(fds.report[1]);
  const std::string& name = options_.argv[0];
  if (pid < 0) {
    throw ProcessError("cannot start " + name + ": fork: " + std::strerror(fork_errno));
  }
  if (const auto failure = exec_failure(pid, fds.report[0])) {
    std::string what = "cannot start " + name + ": " + stage_name(failure->stage);
    if (failure->stage == Stage::kAffinity) what += " to CPUs " + format_cpu_list(options_.cpus);
    if (failure->stage == Stage::kWorkingDir) what += " " + setup.working_dir;
    throw ProcessError(what + ": " + std::strerror(failure->error));
  }
  pid_ = pid;
  std::swap(input_fd_, fds.in[0]);
  std::swap(output_fd_, fds.out[0]);
  // Through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C". -1 on kernels < 5.3: waits
  // then poll waitpid and signals use kill().
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U));
}

Process::~Process() {
  release();
}

Process::Process(Process&& other) noexcept
    : options_(std::move(other.options_)),
      pid_(other.pid_),
      pidfd_(other.pidfd_),
      input_fd_(other.input_fd_),
      output_fd_(other.output_fd_),
      status_(other.status_),
      final_times_(other.final_times_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
  other.input_fd_ = -1;
  other.output_fd_ = -1;
}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    release();
    options_ = std::move(other.options_);
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    input_fd_ = other.input_fd_;
    output_fd_ = other.output_fd_;
    status_ = other.status_;
    final_times_ = other.final_times_;
    other.pid_ = -1;
    other.pidfd_ = -1;
    other.input_fd_ = -1;
    other.output_fd_ = -1;
  }
  return *this;
}

void Process::release() {
  if (pid_ > 0 && !status_) {
    try {
      signal(SIGKILL);
      wait();
    } catch (...) {  // from a destructor or a move: nothing to report to; the fds close anyway
    }
  }
  close_fd(pidfd_);
  close_fd(input_fd_);
  close_fd(output_fd_);
}

void Process::close_input() {
  close_fd(input_fd_);
}

void Process::reap(int status, CpuTimes times) {
  ExitStatus s;
  if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  } else {
    s.code = WEXITSTATUS(status);
  }
  status_ = s;
  final_times_ = times;
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
}

bool Process::running() {
  return !wait_for(milliseconds(0)).has_value();
}

std::optional<ExitStatus> Process::wait_for(milliseconds timeout) {
  if (status_ || pid_ <= 0) return status_;
  const auto deadline = Clock::now() + timeout;
  auto backoff = milliseconds(1);
  for (;;) {
    int status = 0;
    struct rusage usage {};
    const pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
    if (r == pid_) {
      reap(status, times_of(usage));
      return status_;
    }
    if (r < 0 && errno != EINTR) {
      throw ProcessError("waiting for pid " + std::to_string(pid_) + ": " + std::strerror(errno));
    }
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    } else {
      // No pidfd (kernel < 5.3): waitpid has no timeout, so poll it with a growing back-off.
      std::this_thread::sleep_for(std::min(backoff, left));
      backoff = std::min(backoff * 2, milliseconds(20));
    }
  }
}

ExitStatus Process::wait() {
  if (status_) return *status_;
  if (pid_ <= 0) throw ProcessError("wait: no process");
  int status = 0;
  struct rusage usage {};
  pid_t r = -1;
  do {
    r = ::wait4(pid_, &status, 0, &usage);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) {
    throw ProcessError("waiting for pid " + std::to_string(pid_) + ": " + std::strerror(errno));
  }
  reap(status, times_of(usage));
  return *status_;
}

void Process::signal(int signal_number) {
  if (pid_ <= 0 || status_) return;
  if (pidfd_ >= 0) {
    ::syscall(SYS_pidfd_send_signal, pidfd_, signal_number, nullptr, 0U);
  } else {
    ::kill(pid_, signal_number);
  }
}

StopResult Process::terminate(milliseconds grace) {
  if (!running()) return {*status_, false};
  signal(SIGTERM);
  signal(SIGCONT);  // a stopped process must run to act on SIGTERM
  if (const auto s = wait_for(grace)) return {*s, false};
  signal(SIGKILL);
  return {wait(), true};
}

CpuTimes Process::cpu_times() const {
  if (status_) return final_times_;
  if (pid_ <= 0) return {};
  return read_cpu_times(pid_).value_or(CpuTimes{});
}

std::vector<int> Process::allowed_cpus() const {
  if (pid_ <= 0 || status_) return {};
  return affinity_of(pid_);
}

}  // namespace spotlight::process
