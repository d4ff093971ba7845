#include "daemon/connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace jvmtrace {

Connection::Connection(int fd, size_t max, std::string terminator, double now)
    : fd_(fd), max_(max), term_(std::move(terminator)), deadline_(now + kReadSeconds) {
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

Connection::~Connection() { close(fd_); }

short Connection::events() const {
  switch (state_) {
    case kReading:
    case kDraining: return POLLIN;
    case kWriting: return POLLOUT;
    default: return 0;
  }
}

void Connection::on_ready(double now) {
  char buf[4096];
  if (state_ == kReading) {
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // more later
      if (n <= 0) {
        end_ = kClosed;
        break;
      }
      in_.append(buf, static_cast<size_t>(n));
      if (in_.find(term_) != std::string::npos) {
        end_ = kTerminated;
        break;
      }
      if (in_.size() > max_) {
        end_ = kTooLong;
        break;
      }
    }
    state_ = kReady;
  } else if (state_ == kWriting) {
    flush(now);
  } else if (state_ == kDraining) {
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      drained_ += n > 0 ? static_cast<size_t>(n) : 0;
      if (n <= 0 || drained_ > (1u << 20)) {
        state_ = kDone;
        return;
      }
    }
  }
}

void Connection::on_time(double now) {
  if (now < deadline_) return;
  if (state_ == kReading) {
    end_ = kTimedOut;
    state_ = kReady;
  } else if (state_ == kWriting || state_ == kDraining) {
    state_ = kDone;
  }
}

void Connection::reply(const std::string& text, double now) {
  out_ = text;
  state_ = kWriting;
  deadline_ = now + kWriteSeconds;
  flush(now);
}

void Connection::flush(double now) {
  while (!out_.empty()) {
    const ssize_t n = send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // the client is slow to read
    if (n <= 0) {
      state_ = kDone;  // it went away
      return;
    }
    out_.erase(0, static_cast<size_t>(n));
  }
  if (end_ == kTooLong) {
    shutdown(fd_, SHUT_WR);
    state_ = kDraining;
    deadline_ = now + kReadSeconds;
  } else {
    state_ = kDone;
  }
}

}  // namespace jvmtrace
