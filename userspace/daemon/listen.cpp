#include "daemon/listen.h"

#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "daemon/log.h"
#include "daemon/trace_dir.h"

namespace jvmtrace {

int listen_control_socket(const std::string& path, const std::string& group, gid_t* gid, std::string* error) {
  *gid = static_cast<gid_t>(-1);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path || path.empty()) {
    *error = "socket path too long (or empty): " + path;
    return -1;
  }
  if (!group.empty()) {
    struct group* g = getgrnam(group.c_str());
    if (!g) {
      *error = "no group '" + group + "'";
      return -1;
    }
    *gid = g->gr_gid;
  }
  // Everything below goes by path (bind, unlink): the socket's directory and
  // every one above it must be root's alone, or someone could put another
  // file (a link to /etc/shadow) where the path leads.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  char real[PATH_MAX];
  const mode_t umask_was = umask(022);  // (its own directory, /run/jvmtraced: 0755 whatever the unit's UMask)
  const int made = mkdir(dir.c_str(), 0755);
  const int mkdir_errno = errno;
  umask(umask_was);
  if (made != 0 && mkdir_errno != EEXIST) {
    *error = "cannot create the control socket's directory " + dir + ": " + std::strerror(mkdir_errno);
    return -1;
  }
  if (!realpath(dir.c_str(), real)) {
    *error = "the control socket's directory " + dir + ": " + std::strerror(errno);
    return -1;
  }
  const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (std::string why = unsafe_parents("control socket " + path, std::string(real) + "/" + name); !why.empty()) {
    *error = why;
    return -1;
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    *error = path + " exists and is not a socket: not removed (remove it, or choose another --socket)";
    return -1;
  }
  unlink(path.c_str());
  std::strcpy(a.sun_path, path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  // Created with its owner, group and mode at once (the node gets the
  // process's fsgid and the umask's mode): nothing is changed by path after.
  const mode_t old = umask(group.empty() ? 0177 : 0117);
  if (!group.empty()) setfsgid(*gid);
  const int b = fd >= 0 ? bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) : -1;
  const int bind_errno = errno;
  if (!group.empty()) setfsgid(0);
  umask(old);
  errno = bind_errno;
  // (a deep backlog: a group member's flood of connects cannot leave root's none)
  if (b != 0 || listen(fd, SOMAXCONN) != 0) {
    *error = "cannot listen on " + path + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  // (a set-group-ID directory gives its own group instead: refused, not changed)
  const gid_t want = group.empty() ? 0 : *gid;
  if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != 0 || st.st_gid != want ||
      (st.st_mode & 0777) != (group.empty() ? 0600u : 0660u)) {
    *error = "the control socket " + path + " did not come out root:" + (group.empty() ? "root" : group) + " " +
             (group.empty() ? "0600" : "0660") + " (a set-group-ID directory?): choose another --socket";
    close(fd);
    unlink(path.c_str());
    return -1;
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
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, SOMAXCONN) != 0) {
    *error = "cannot serve metrics on " + address + ":" + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

uid_t peer_uid(int fd) {
  ucred cr{};
  socklen_t len = sizeof cr;
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? cr.uid : static_cast<uid_t>(-1);
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
