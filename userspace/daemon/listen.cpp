#include "daemon/listen.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "daemon/log.h"

namespace jvmtrace {

int listen_control_socket(const std::string& path, const std::string& group, gid_t* gid, std::string* error) {
  *gid = static_cast<gid_t>(-1);
  unlink(path.c_str());
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    *error = "socket path too long: " + path;
    return -1;
  }
  std::strcpy(a.sun_path, path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // Created with no access for anyone but root, then opened up as configured.
  const mode_t old = umask(0177);
  const int b = fd >= 0 ? bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) : -1;
  umask(old);
  if (b != 0 || listen(fd, 16) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  if (!group.empty()) {
    struct group* g = getgrnam(group.c_str());
    if (!g) {
      *error = "no group '" + group + "'";
      close(fd);
      return -1;
    }
    *gid = g->gr_gid;
    if (chown(path.c_str(), 0, g->gr_gid) != 0 || chmod(path.c_str(), 0660) != 0) {
      *error = "cannot give " + path + " to group " + group + ": " + std::strerror(errno);
      close(fd);
      return -1;
    }
  }
  return fd;
}

int listen_metrics_socket(const std::string& address, long port, std::string* error) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) {
    *error = "--metrics-address must be an IPv4 address, not " + address;
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0) {
    *error = "cannot serve metrics on " + address + ":" + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

bool peer_authorised(int fd, gid_t group, std::string* who) {
  ucred cr{};
  socklen_t len = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) return false;
  *who = "uid " + std::to_string(cr.uid) + " pid " + std::to_string(cr.pid);
  if (cr.uid == 0) return true;
  if (group == static_cast<gid_t>(-1)) return false;
  if (cr.gid == group) return true;
  std::vector<gid_t> groups(64);
  for (;;) {
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) break;
    if (errno != ERANGE || groups.size() >= 65536) {
      log_line("warn", "SO_PEERGROUPS: %s; only the primary group of %s was checked", std::strerror(errno),
               who->c_str());
      return false;
    }
    groups.resize(len / sizeof(gid_t) + 1);  // ERANGE: len says how many there are
  }
  groups.resize(len / sizeof(gid_t));
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

}  // namespace jvmtrace
