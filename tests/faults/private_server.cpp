// SPDX-License-Identifier: Apache-2.0
#include "private_server.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "dblock/open.hpp"
#include "dblock/url.hpp"

namespace dblock::testing {

namespace {

std::string make_temp_dir() {
  // Short: the servers' unix sockets live inside (108 bytes at most).
  std::string templ = "/tmp/dblock-crash-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  ::rmdir(templ.c_str());  // dev-db.sh creates it itself, and refuses one it did not create
  return templ;
}

}  // namespace

PrivateServer::PrivateServer(Dialect dialect, std::string_view url_env)
    : dialect_(dialect),
      dir_(make_temp_dir()),
      script_(DBLOCK_SOURCE_DIR "/scripts/dev-db.sh"),
      url_env_(url_env) {
  auto started = run_process({"/bin/bash", script_, "start",
                              dialect == Dialect::kPostgreSQL ? "--pg-only" : "--mysql-only"},
                             {{"DBLOCK_DEV_DB_DIR", dir_}});
  if (started.exit_code != 0) {
    throw std::runtime_error("scripts/dev-db.sh start failed: " + started.err);
  }
  auto printed = run_process({"/bin/bash", script_, "env"}, {{"DBLOCK_DEV_DB_DIR", dir_}});
  std::istringstream lines(printed.out);
  for (std::string line; std::getline(lines, line);) {
    // export NAME='value' (values here hold no quotes)
    if (line.rfind("export ", 0) != 0) continue;
    auto eq = line.find('=');
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '\'') value = value.substr(1, value.size() - 2);
    env_[line.substr(7, eq - 7)] = value;
  }
  url_ = env(dialect == Dialect::kPostgreSQL ? "DBLOCK_TEST_PG_URL" : "DBLOCK_TEST_MYSQL_URL");
  if (!url_env_.empty()) {
    const char* previous = std::getenv(url_env_.c_str());
    previous_url_ = previous ? previous : "";
    ::setenv(url_env_.c_str(), url_.c_str(), 1);
  }
}

PrivateServer::~PrivateServer() {
  if (!url_env_.empty()) ::setenv(url_env_.c_str(), previous_url_.c_str(), 1);
  if (restarted_mariadbd_) {
    // Our child: stopped and reaped here, or dev-db.sh would wait for its zombie to go.
    restarted_mariadbd_->signal(SIGTERM);
    restarted_mariadbd_->wait();
  }
  run_process({"/bin/bash", script_, "stop"}, {{"DBLOCK_DEV_DB_DIR", dir_}});
}

std::string PrivateServer::env(const std::string& name) const {
  auto it = env_.find(name);
  if (it == env_.end()) throw std::runtime_error("scripts/dev-db.sh env printed no " + name);
  return it->second;
}

std::vector<std::string> PrivateServer::as_server_user(std::vector<std::string> argv) const {
  if (::geteuid() != 0) return argv;
  const std::string user = env(dialect_ == Dialect::kPostgreSQL ? "DBLOCK_TEST_PG_OS_USER"
                                                                : "DBLOCK_TEST_MYSQL_OS_USER");
  std::vector<std::string> out{"/usr/sbin/runuser", "-u", user, "--"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

void PrivateServer::crash_and_restart(std::chrono::milliseconds down) {
  if (dialect_ == Dialect::kPostgreSQL) {
    const std::string pg_ctl = env("DBLOCK_TEST_PG_BIN") + "/pg_ctl";
    auto stopped = run_process(
        as_server_user({pg_ctl, "-D", env("DBLOCK_TEST_PG_DATA"), "-m", "immediate", "stop"}));
    if (stopped.exit_code != 0) throw std::runtime_error("pg_ctl stop failed: " + stopped.err);
    std::this_thread::sleep_for(down);
    // restart finds no running server and starts one with the options of the last start
    // (postmaster.opts): the same port and socket directory.
    auto started =
        run_process(as_server_user({pg_ctl, "-D", env("DBLOCK_TEST_PG_DATA"), "-l",
                                    env("DBLOCK_TEST_PG_LOG"), "-w", "-t", "60", "restart"}));
    if (started.exit_code != 0) {
      throw std::runtime_error("pg_ctl restart failed: " + started.out + started.err);
    }
  } else {
    std::ifstream pid_file(env("DBLOCK_TEST_MYSQL_PID_FILE"));
    pid_t pid = 0;
    if (!(pid_file >> pid) || pid <= 0) throw std::runtime_error("no mariadbd pid file");
    ::kill(pid, SIGKILL);  // the server this object started
    for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(down);
    std::vector<std::string> argv{env("DBLOCK_TEST_MYSQL_BIN")};
    std::ifstream args(env("DBLOCK_TEST_MYSQL_ARGS_FILE"));
    for (std::string arg; std::getline(args, arg);) argv.push_back(arg);
    restarted_mariadbd_ =
        std::make_unique<ChildProcess>(argv, std::map<std::string, std::string>{});
  }
  wait_until_it_answers();
}

void PrivateServer::wait_until_it_answers() const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    try {
      open_connection(DatabaseUrl::parse(url_))->execute("SELECT 1");
      return;
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error(std::string("the restarted server does not answer: ") + e.what());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace dblock::testing
