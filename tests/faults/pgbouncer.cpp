// SPDX-License-Identifier: Apache-2.0
#include "pgbouncer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifdef DBLOCK_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace dblock::testing {

namespace {

constexpr const char* kPgBouncer = "/usr/sbin/pgbouncer";

// A port nobody listens on right now (the kernel's choice for an ephemeral bind).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot find a free port for PgBouncer");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

PgBouncer::PgBouncer(const DatabaseUrl& server, int pool_size) {
  if (!std::filesystem::exists(kPgBouncer)) {
    throw std::runtime_error(std::string(kPgBouncer) +
                             " is missing: run scripts/install-deps.sh (package pgbouncer)");
  }
  std::string templ = "/tmp/dblock-pgbouncer-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  port_ = free_port();
  {
    // The password is the throwaway test server's; the file is readable by PgBouncer only.
    std::ofstream users(dir_ + "/userlist.txt");
    users << '"' << server.user << "\" \"" << server.password << "\"\n";
    std::ofstream ini(dir_ + "/pgbouncer.ini");
    ini << "[databases]\n"
        << "* = host=" << (server.host.empty() ? "127.0.0.1" : server.host)
        << " port=" << server.effective_port() << "\n"
        << "[pgbouncer]\n"
        << "listen_addr = 127.0.0.1\n"
        << "listen_port = " << port_ << "\n"
        << "unix_socket_dir =\n"
        << "auth_type = scram-sha-256\n"
        << "auth_file = " << dir_ << "/userlist.txt\n"
        << "pool_mode = transaction\n"
        << "default_pool_size = " << pool_size << "\n"
        << "max_client_conn = 200\n"
        << "admin_users = " << server.user << "\n"
        << "logfile = " << dir_ << "/pgbouncer.log\n"
        << "pidfile = " << dir_ << "/pgbouncer.pid\n";
  }
  std::vector<std::string> argv{kPgBouncer};
  if (::geteuid() == 0) {
    // PgBouncer refuses to run as root: it switches to the postgres user (-u), which must
    // read its files.
    const passwd* pw = ::getpwnam("postgres");
    if (pw == nullptr) throw std::runtime_error("no postgres user to run PgBouncer as");
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_)) {
      if (::chown(entry.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        throw std::runtime_error("cannot chown " + entry.path().string());
      }
    }
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      throw std::runtime_error("cannot chown " + dir_);
    }
    argv.insert(argv.end(), {"-u", "postgres"});
  }
  ::chmod((dir_ + "/userlist.txt").c_str(), 0600);
  argv.push_back(dir_ + "/pgbouncer.ini");
  process_ = std::make_unique<ChildProcess>(argv, std::map<std::string, std::string>{});
  for (int i = 0; i < 200 && !accepts(port_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (!accepts(port_)) {
    auto r = process_->output_so_far();
    throw std::runtime_error("PgBouncer did not start: " + read_text_file(dir_ + "/pgbouncer.log") +
                             r);
  }
}

PgBouncer::~PgBouncer() {
  if (process_) {
    process_->signal(SIGTERM);
    process_->wait();
  }
  std::filesystem::remove_all(dir_);
}

std::vector<std::int64_t> PgBouncer::server_pids(const DatabaseUrl& admin) const {
#ifdef DBLOCK_HAVE_LIBPQ
  // Plain libpq: the admin console speaks only the simple query protocol and reports a server
  // version ("1.18.0/bouncer") that libpqxx refuses.
  const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port_) +
                               " dbname=pgbouncer user='" + admin.user + "' password='" +
                               admin.password + "'";
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("cannot reach PgBouncer's admin console");
  }
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), "SHOW SERVERS"), &PQclear);
  const int column = PQfnumber(r.get(), "remote_pid");
  if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || column < 0) {
    throw std::runtime_error("SHOW SERVERS on PgBouncer's admin console failed");
  }
  std::vector<std::int64_t> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    // remote_pid is 0 while PgBouncer is still logging in to the server: no backend yet.
    if (const auto pid = std::stoll(PQgetvalue(r.get(), i, column)); pid != 0) out.push_back(pid);
  }
  return out;
#else
  (void)admin;
  throw std::runtime_error("this test binary was built without libpq");
#endif
}

DatabaseUrl PgBouncer::through(DatabaseUrl server) const {
  server.host = "127.0.0.1";
  server.port = port_;
  server.transaction_pooler = true;
  return server;
}

}  // namespace dblock::testing
