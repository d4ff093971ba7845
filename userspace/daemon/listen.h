// jvmtraced's two listening sockets and who may use the control socket.
#pragma once
#include <sys/types.h>

#include <string>

namespace jvmtrace {

// The control socket at path (replacing a stale one): created 0600, then
// given to group (0660) when group is not empty, *gid set to its gid
// (-1 without a group).  Non-blocking; -1 with *error.
int listen_control_socket(const std::string& path, const std::string& group, gid_t* gid, std::string* error);

// The metrics endpoint on an IPv4 address and port.  Non-blocking; -1 with
// *error.
int listen_metrics_socket(const std::string& address, long port, std::string* error);

// Only root, or members of `group` (-1: none), may talk to the daemon.
// Membership is the peer's credentials when it connected, as the kernel saw
// them checking the socket's mode: its gid (SO_PEERCRED) and its
// supplementary groups (SO_PEERGROUPS, Linux 4.13).  Not the group database:
// no NSS lookup (LDAP...) can stall the loop, and a process that dropped the
// group (setgroups) is refused, as the socket's mode refuses it.  *who names
// the peer for the log.
bool peer_authorised(int fd, gid_t group, std::string* who);

// The peer's uid (SO_PEERCRED), or (uid_t)-1 if it cannot be told.
uid_t peer_uid(int fd);

}  // namespace jvmtrace
