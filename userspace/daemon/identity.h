// Who a JVM is, for the daemon's metrics labels (docs/daemon.md, "Labels";
// docs/decisions.md 98 and 128): read from the target's /proc files by the
// discovery process.  Both are the target's text; what they are worth differs.
#pragma once
#include <string>
#include <vector>

namespace jvmtrace {

// The application a java command line runs: the value of -Djvmtrace.app=
// among the JVM's options, else the main class (-m: the module's class, or
// the module), else the -jar file's name without directories or ".jar";
// "" when none is there (a JVM embedded in another program).
// *set: it was -Djvmtrace.app's.  The process's own claim: whoever starts a
// JVM chooses every word of its command line.
std::string application_of(const std::vector<std::string>& argv, bool* set = nullptr);

// The container a process runs in, from /proc/PID/cgroup's text: the first
// 12 digits of the 64-hex-digit id of the outermost cgroup a container
// runtime made for it, in a layout only root can make (container_in_path);
// "" if there is none, or if the file's lines name different containers.
std::string container_of(const std::string& cgroup_text);

// The 64-hex-digit id one cgroup path ("/system.slice/docker-ID.scope")
// names by a container runtime's own layout, or "":
//   systemd's driver (cgroup v1 and v2): slices from the root, then the
//     runtime's scope: docker-ID.scope (docker, and a kubelet on docker),
//     cri-containerd-ID.scope (containerd's CRI), crio-ID.scope (CRI-O),
//     libpod-ID.scope (podman), as in /system.slice/docker-ID.scope and
//     /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podUID.slice/cri-containerd-ID.scope
//   cgroupfs' driver: /docker/ID (docker), /kubepods[/burstable|/besteffort]/podUID/ID
//     or .../crio-ID (a kubelet with cgroupfs), /libpod_parent/libpod-ID (podman)
// What the container made below its own cgroup (a systemd inside it, crun's
// "container") follows.  A cgroup below anything but a slice is refused: a
// unit systemd delegates (user@UID.service, which every logged-in user
// owns; any Delegate=yes service) is its owner's to fill with cgroups of
// any name, such as user@1000.service/app.slice/docker-ID.scope
// (`systemd-run --user --scope --unit=docker-ID`).  So are rootless
// containers: they are their user's cgroups, and unverifiable.
std::string container_in_path(const std::string& path);

}  // namespace jvmtrace
