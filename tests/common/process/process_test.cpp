// common/process with real children (/bin/sh, sleep): exit codes, argv/env/working dir/log,
// CPU pinning as the kernel reports it, SIGTERM with escalation to SIGKILL, CPU seconds from /proc
// and wait4, and spawn failures that name their cause.
#include "common/process/process.hpp"

#include <csignal>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/socket.h>

#include "common/process/line_reader.hpp"
#include "tests/support/process.hpp"
#include "tests/support/wait_for.hpp"

namespace spotlight::process {
namespace {

using namespace std::chrono_literals;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::make_temp_dir("spotlight-process"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ProcessOptions shell(const std::string& script) {
    ProcessOptions o;
    o.argv = {"/bin/sh", "-c", script};
    o.log = dir_ / "out.log";
    return o;
  }

  std::filesystem::path dir_;
};

TEST_F(ProcessTest, ReportsTheExitCode) {
  Process p(shell("exit 3"));
  const ExitStatus s = p.wait();
  EXPECT_TRUE(s.exited());
  EXPECT_EQ(s.code, 3);
  EXPECT_EQ(s.shell_code(), 3);
  EXPECT_EQ(s.describe(), "exit 3");
  EXPECT_FALSE(p.running());
}

TEST_F(ProcessTest, PassesArgvEnvironmentWorkingDirAndLogsOutput) {
  ProcessOptions o = shell("echo \"$SPOTLIGHT_PROCESS_TEST $0 $1\"; pwd; echo oops >&2");
  o.argv.push_back("first");
  o.argv.push_back("second");
  o.env["SPOTLIGHT_PROCESS_TEST"] = "hello";
  o.working_dir = dir_;
  o.log = dir_ / "logs" / "child.log";  // the folder is created
  Process p(o);
  EXPECT_TRUE(p.wait().success());
  const std::string log = read_file(o.log);
  EXPECT_NE(log.find("hello first second"), std::string::npos) << log;
  EXPECT_NE(log.find(std::filesystem::canonical(dir_).string()), std::string::npos) << log;
  EXPECT_NE(log.find("oops"), std::string::npos) << "stderr goes to the log too: " << log;
}

TEST_F(ProcessTest, WithoutInheritanceTheChildSeesOnlyItsOwnEnvironment) {
  ::setenv("SPOTLIGHT_PROCESS_PARENT_ONLY", "leaked", 1);
  ProcessOptions o = shell("echo \"[${SPOTLIGHT_PROCESS_PARENT_ONLY}] [$MINE]\"");
  o.inherit_env = false;
  o.env["MINE"] = "x";
  Process p(o);
  EXPECT_TRUE(p.wait().success());
  ::unsetenv("SPOTLIGHT_PROCESS_PARENT_ONLY");
  EXPECT_NE(read_file(o.log).find("[] [x]"), std::string::npos) << read_file(o.log);
}

TEST_F(ProcessTest, PinsTheChildToItsCpuSetBeforeExec) {
  const std::vector<int> mine = affinity_of(0);
  ASSERT_FALSE(mine.empty());
  const int cpu = mine.back();
  // The program reads its own affinity: it was set before exec, not after.
  ProcessOptions o = shell("grep Cpus_allowed_list /proc/self/status; exec sleep 30");
  o.cpus = {cpu};
  Process p(o);
  EXPECT_EQ(p.allowed_cpus(), std::vector<int>{cpu});
  ASSERT_TRUE(testing::wait_for(
      [&] { return read_file(o.log).find("Cpus_allowed_list") != std::string::npos; }, 10s));
  EXPECT_NE(read_file(o.log).find("Cpus_allowed_list:\t" + std::to_string(cpu) + "\n"),
            std::string::npos)
      << read_file(o.log);
  p.terminate(1s);
  EXPECT_TRUE(p.allowed_cpus().empty()) << "no affinity for a reaped process";
}

TEST_F(ProcessTest, TerminateStopsAProcessThatHonoursSigterm) {
  Process p(shell("exec sleep 30"));
  EXPECT_FALSE(p.wait_for(50ms).has_value()) << "sleep 30 is still running";
  const StopResult r = p.terminate(10s);
  EXPECT_FALSE(r.escalated);
  EXPECT_EQ(r.status.signal, SIGTERM);
  EXPECT_EQ(r.status.shell_code(), 128 + SIGTERM);
  EXPECT_EQ(r.status.describe(), "SIGTERM");
}

TEST_F(ProcessTest, TerminateEscalatesToSigkillAfterTheGracePeriod) {
  // An ignored SIGTERM stays ignored across exec: this sleep cannot be stopped by SIGTERM.
  Process p(shell("trap '' TERM; echo ready; exec sleep 30"));
  ASSERT_TRUE(testing::wait_for(
      [&] { return read_file(dir_ / "out.log").find("ready") != std::string::npos; }, 10s));
  const StopResult r = p.terminate(200ms);
  EXPECT_TRUE(r.escalated);
  EXPECT_EQ(r.status.signal, SIGKILL);
}

TEST_F(ProcessTest, TerminateOfAnExitedProcessReturnsItsStatus) {
  Process p(shell("exit 0"));
  p.wait();
  const StopResult r = p.terminate(1s);
  EXPECT_FALSE(r.escalated);
  EXPECT_TRUE(r.status.success());
}

TEST_F(ProcessTest, CountsCpuSecondsWhileRunningAndAfterExitIncludingDescendants) {
  // A busy grandchild: its CPU time reaches the child's once the child waits for it.
  const std::string busy = "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done";
  Process running(shell(busy + "; exec sleep 30"));
  ASSERT_TRUE(testing::wait_for([&] { return running.cpu_times().total() > 0.05; }, 60s))
      << "no CPU time seen in /proc while it runs";
  running.terminate(1s);
  EXPECT_GT(running.cpu_times().total(), 0.05) << "kept after exit";

  Process parent(shell("/bin/sh -c '" + busy + "'; true"));
  EXPECT_TRUE(parent.wait().success());
  const CpuTimes t = parent.cpu_times();
  EXPECT_GT(t.total(), 0.05) << "wait4's rusage includes the waited-for grandchild";
  EXPECT_GE(t.user_seconds, 0.0);
  EXPECT_GE(t.system_seconds, 0.0);

  Process idle(shell("exec sleep 0.2"));
  idle.wait();
  EXPECT_LT(idle.cpu_times().total(), t.total()) << "a sleeping process uses less than a busy one";
}

TEST_F(ProcessTest, SpawnFailuresNameTheCause) {
  ProcessOptions missing;
  missing.argv = {"spotlight-no-such-program"};
  try {
    Process p(missing);
    FAIL() << "started a program that does not exist";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("spotlight-no-such-program"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
  ProcessOptions not_executable;
  not_executable.argv = {(dir_ / "nothing-here").string()};
  EXPECT_THROW(Process{not_executable}, ProcessError);

  ProcessOptions bad_dir = shell("true");
  bad_dir.working_dir = dir_ / "does-not-exist";
  try {
    Process p(bad_dir);
    FAIL() << "started in a missing directory";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("working directory"), std::string::npos) << e.what();
  }

  ProcessOptions bad_cpu = shell("true");
  bad_cpu.cpus = {CPU_SETSIZE - 1};  // no machine has it online
  try {
    Process p(bad_cpu);
    FAIL() << "pinned to a CPU that is not there";
  } catch (const ProcessError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
  }

  ProcessOptions no_argv;
  EXPECT_THROW(Process{no_argv}, std::invalid_argument);
}

TEST_F(ProcessTest, DestroyingARunningProcessKillsAndReapsIt) {
  pid_t pid = -1;
  {
    Process p(shell("exec sleep 30"));
    pid = p.pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  errno = 0;
  EXPECT_EQ(::kill(pid, 0), -1) << "pid " << pid << " still exists (zombie or running)";
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(ProcessTest, MovedProcessesKeepTheirChild) {
  Process a(shell("exit 7"));
  Process b(std::move(a));
  EXPECT_EQ(b.wait().code, 7);
  std::vector<Process> many;
  for (int i = 0; i < 3; ++i)
    many.emplace_back(shell("exit " + std::to_string(i)));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(many[static_cast<size_t>(i)].wait().code, i);
}

TEST_F(ProcessTest, PipesCarryALineProtocolBothWaysWithStderrInTheLog) {
  // The child echoes each line it reads with a prefix, says something on stderr, and exits at
  // end of input: what a rank process does on its stdin/stdout.
  ProcessOptions o = shell("echo started >&2; while read -r l; do echo \"got $l\"; done; echo bye");
  o.pipe_stdin = true;
  o.pipe_stdout = true;
  Process p(o);
  ASSERT_GE(p.input_fd(), 0);
  ASSERT_GE(p.output_fd(), 0);
  LineReader lines(p.output_fd());
  for (const std::string word : {"one", "two"}) {
    const std::string line = word + "\n";
    ASSERT_EQ(::send(p.input_fd(), line.data(), line.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(line.size()));
    EXPECT_EQ(lines.next(10s), "got " + word);
  }
  EXPECT_EQ(lines.next(50ms), std::nullopt) << "a line that was never written";
  EXPECT_FALSE(lines.at_end());
  p.close_input();
  EXPECT_EQ(p.input_fd(), -1);
  EXPECT_EQ(lines.next(10s), "bye");
  EXPECT_EQ(lines.next(10s), std::nullopt);
  EXPECT_TRUE(lines.at_end());
  EXPECT_TRUE(p.wait().success());
  EXPECT_EQ(read_file(dir_ / "out.log"), "started\n") << "stderr goes to the log, not the pipe";
}

TEST_F(ProcessTest, StderrCanShareTheOutputPipeAndAClosedChildIsAnErrorNotSigpipe) {
  ProcessOptions o = shell("echo out; echo err >&2; printf tail");
  o.log.clear();
  o.pipe_stdin = true;
  o.pipe_stdout = true;
  o.pipe_stderr = true;
  Process p(o);
  LineReader lines(p.output_fd());
  std::vector<std::string> got;
  while (auto line = lines.next(10s))
    got.push_back(*line);
  EXPECT_TRUE(lines.at_end());
  EXPECT_EQ(got, (std::vector<std::string>{"out", "err", "tail"})) << "the unterminated tail too";
  EXPECT_TRUE(p.wait().success());
  // The child has gone: writing to its stdin fails with EPIPE instead of killing the test.
  const char byte = 'x';
  errno = 0;
  EXPECT_EQ(::send(p.input_fd(), &byte, 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);

  ProcessOptions bad = shell("true");
  bad.pipe_stderr = true;  // without pipe_stdout
  EXPECT_THROW(Process{bad}, std::invalid_argument);
}

TEST(CpuList, ParsesAndFormatsTheKernelsForm) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("0-2,5"), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(parse_cpu_list("3,1,1"), (std::vector<int>{1, 3}));
  EXPECT_TRUE(parse_cpu_list("").empty());
  EXPECT_EQ(format_cpu_list({5, 0, 1, 2}), "0-2,5");
  EXPECT_EQ(format_cpu_list({1, 3}), "1,3");
  EXPECT_EQ(format_cpu_list({}), "");
  for (const char* bad : {"a", "1-", "-1", "2-1", "1,,2", "1, 2", "99999"}) {
    EXPECT_THROW(parse_cpu_list(bad), std::invalid_argument) << bad;
  }
}

TEST(ProcStat, ReadsThisProcessAndNothingForAMissingOne) {
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i)
    x = x + 1.0;
  const auto self = read_cpu_times(::getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_GT(self->total(), 0.0);
  EXPECT_FALSE(read_cpu_times(-5).has_value());
  EXPECT_TRUE(affinity_of(-5).empty());
}

}  // namespace
}  // namespace spotlight::process
