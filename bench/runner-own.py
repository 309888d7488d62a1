# The Python runner's own time per warm run (issue 26): the round trip of a `pass` run in a session runner, from a
# driver that speaks its protocol (docs/protocol.md: 4-byte length, JSON, fd 3), beside the round trip of an echo
# process that answers each frame with a `done` at once, alternating. The difference is what the runner does around
# the user's code (reading the frame, the reader thread's hand-over, compiling, `started`, the output drain, `done`).
#   python3 bench/runner-own.py [rounds]
import json, os, socket, subprocess, sys, time
PY = sys.executable
_hold = [os.open("/dev/null", os.O_RDONLY) for _ in range(3)]
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime-py", "runner.py")
ECHO = r'''
import os
def rd(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c: os._exit(0)
        b += c
    return b
while True:
    n = int.from_bytes(rd(4), "big"); body = rd(n)
    out = b'{"type":"done","id":"x","exitCode":0}'
    os.write(3, len(out).to_bytes(4, "big") + out)
'''
def start(argv):
    a, b = socket.socketpair()
    os.dup2(b.fileno(), 3)
    p = subprocess.Popen(argv, pass_fds=(3,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.dup2(_hold[0], 3)
    b.close()
    return p, a
def send(s, obj):
    d = json.dumps(obj).encode()
    s.sendall(len(d).to_bytes(4, "big") + d)
def recv(s):
    def rd(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c: raise EOFError
            b += c
        return b
    n = int.from_bytes(rd(4), "big")
    return json.loads(rd(n))
runner, rs = start([PY, RUNNER, "--mode", "session"])
while recv(rs)["type"] != "ready": pass
echo, es = start([PY, "-c", ECHO])
def rtt(s, i, wait_done=True):
    t = time.perf_counter()
    send(s, {"type": "run", "id": "r%d" % i, "code": "pass", "filename": "script-%d.py" % i})
    while True:
        f = recv(s)
        if f["type"] == "done": break
    return (time.perf_counter() - t) * 1e6
for i in range(200): rtt(rs, i); rtt(es, i)
R, E = [], []
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
for i in range(200, 200 + N):
    R.append(rtt(rs, i)); E.append(rtt(es, i))
R.sort(); E.sort()
print("runner p50 %.0f us, echo p50 %.0f us, runner's own ~%.0f us" % (R[len(R)//2], E[len(E)//2], R[len(R)//2] - E[len(E)//2]))

send(rs, {"type": "shutdown"})
runner.wait()
