package vncrelay

// script is the relay run on the host as `python3 -I -S -c SCRIPT PATH UID`
// (standard library only). It connects to the unix socket PATH, checks
// with SO_PEERCRED that the process serving it runs as UID (exit 3
// otherwise; 2 when the socket cannot be reached), writes the ready byte,
// then copies stdin to the socket and the socket to stdout, unbuffered:
// stdin's end is passed on as a half-close (shutdown SHUT_WR) and reading
// goes on; the socket's end, or stdout closed by bureau, ends the relay.
// A thread per direction, so neither side's blocked write stalls the
// other.
//
// It goes between single quotes on a shell command line: it must not
// hold one ("\x27" stands for it in the message).
const script = `import os, socket, struct, sys, threading
path, want = sys.argv[1], int(sys.argv[2])

def fail(code, msg):
    os.write(2, (msg + "\n").encode(errors="replace"))
    os._exit(code)

def write(fd, b):
    b = memoryview(b)
    while b:
        b = b[os.write(fd, b):]

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(path)
except OSError as e:
    fail(2, "vnc socket %s: %s" % (path, e.strerror or e))
s.settimeout(None)
pid, uid, gid = struct.unpack("iII", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
if uid != want:
    fail(3, "vnc socket %s is served by uid %d, not the desktop\x27s QEMU user %d" % (path, uid, want))
try:
    write(1, b"\x01")
except OSError:
    os._exit(0)

def up():
    try:
        while True:
            b = os.read(0, 65536)
            if not b:
                break
            s.sendall(b)
    except OSError:
        pass
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass

threading.Thread(target=up, daemon=True).start()
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        write(1, b)
except BrokenPipeError:
    pass
except OSError as e:
    fail(1, "vnc socket %s: %s" % (path, e.strerror or e))
os._exit(0)
`
