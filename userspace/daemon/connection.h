// One client connection of jvmtraced's event loop (control socket or
// metrics).  Nothing here blocks: the request is read as it arrives, up to
// a size and within one deadline for the whole request; the daemon may
// answer later (an attach waits for its worker); the reply is written as
// the client takes it, within its own deadline.  A slow, silent or
// trickling client holds up no one but itself.
#pragma once
#include <cstddef>
#include <string>

namespace jvmtrace {

class Connection {
 public:
  enum State {
    kReading,   // until the terminator, max bytes, EOF or the deadline
    kReady,     // the request is in (see end()): the daemon's turn
    kWaiting,   // the daemon answers later (wait())
    kWriting,   // the reply goes out
    kDraining,  // the request was too long: drop what the client still sends,
                // so that closing does not reset the connection and lose the reply
    kDone,      // to be closed
  };
  enum End { kTerminated, kTooLong, kTimedOut, kClosed };

  static constexpr double kReadSeconds = 1, kWriteSeconds = 5;

  // Takes fd (made non-blocking; closed by the destructor).
  Connection(int fd, size_t max, std::string terminator, double now);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  State state() const { return state_; }
  short events() const;                // what to poll for (0: nothing now)
  void on_ready(double now);           // poll said it may read or write
  void on_time(double now);            // past a deadline: give up as the state says
  End end() const { return end_; }     // kReady onwards: how the request ended
  const std::string& request() const { return in_; }

  void wait() { state_ = kWaiting; }   // the daemon will reply() later
  void reply(const std::string& text, double now);

 private:
  void flush(double now);
  int fd_;
  size_t max_;
  std::string term_, in_, out_;
  State state_ = kReading;
  End end_ = kTerminated;
  double deadline_;
  size_t drained_ = 0;
};

}  // namespace jvmtrace
