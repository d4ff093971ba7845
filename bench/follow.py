"""A child's output, line by line, read in a thread (the benches' recorders
and bpftrace): every line kept, and an event set once a line says the child
is ready (attached), so a bench waits on that condition, not on time."""
import threading


class Follow:
    def __init__(self, stream, ready):
        self.lines = []  # without their newlines
        self._ready = threading.Event()

        def read():
            for line in stream:
                self.lines.append(line.rstrip("\n"))
                if ready(line):
                    self._ready.set()
        self._thread = threading.Thread(target=read, daemon=True)
        self._thread.start()

    def wait(self, timeout):
        """True once the ready line came, False after timeout seconds."""
        return self._ready.wait(timeout)

    def join(self, timeout):
        """Waits (at most timeout seconds) for the child's last line: call it
        once the child has exited."""
        self._thread.join(timeout)

    def text(self):
        return "\n".join(self.lines)
