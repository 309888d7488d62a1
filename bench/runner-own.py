# The Python runner's own time per warm run (issue 26): the round trip of a `pass` run in a session runner, from a
# driver that speaks its protocol (docs/protocol.md: 4-byte length, JSON, fd 3), beside the round trip of an echo
# process that answers each frame with a `done` at once, alternating. The difference is what the runner does around
# the user's code (reading the frame, the reader thread's hand-over, compiling, `started`, the output drain, `done`).
#   python3 bench/runner-own.py [rounds] [--against OTHER/runner.py]
# --against alternates a second runner (a copy of runtime-py/ from before a change) with the two, in the same rounds.
# The echo sends no `started`, so the runner's own time includes that frame's write and its reading by the driver; a
# second echo that sends it too (the protocol's least answer) is measured alongside.
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
    if STARTED:
        out = b'{"type":"started","id":"x"}'
        os.write(3, len(out).to_bytes(4, "big") + out)
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
args = sys.argv[1:]
OTHER = None
if "--against" in args:
    i = args.index("--against")
    OTHER = os.path.abspath(args[i + 1])
    del args[i : i + 2]
runners = []
for path in [RUNNER] + ([OTHER] if OTHER else []):
    p, s = start([PY, path, "--mode", "session"])
    while recv(s)["type"] != "ready": pass
    runners.append((p, s))
echo, es = start([PY, "-c", "STARTED = False\n" + ECHO])
# The protocol's least answer: `started` and `done`, each its own write, as the runner sends them.
echo2, es2 = start([PY, "-c", "STARTED = True\n" + ECHO])
def rtt(s, i, wait_done=True):
    t = time.perf_counter()
    send(s, {"type": "run", "id": "r%d" % i, "code": "pass", "filename": "script-%d.py" % i})
    while True:
        f = recv(s)
        if f["type"] == "done": break
    return (time.perf_counter() - t) * 1e6
# Each round measures every process once, in an order rotated round by round: what one leaves running after its
# `done` (the old runner's hand-back of the channel) then falls on each of the others alike.
procs = [s for _, s in runners] + [es, es2]
for i in range(200):
    for s in procs: rtt(s, i)
times = {id(s): [] for s in procs}
N = int(args[0]) if args else 2000
for i in range(200, 200 + N):
    k = i % len(procs)
    for s in procs[k:] + procs[:k]:
        times[id(s)].append(rtt(s, i))
T = [times[id(s)] for _, s in runners]
E, E2 = times[id(es)], times[id(es2)]
p50 = lambda xs: sorted(xs)[len(xs) // 2]
e = p50(E)
# Own time: the median of each round's difference (a runner's round trip minus the echo's right after it), which
# a shared machine's load disturbs less than a difference of medians; the latter is printed too.
for name, t in zip(["runner", "against"], T):
    d = sorted(a - b for a, b in zip(t, E))
    d2 = sorted(a - b for a, b in zip(t, E2))
    print("%s p50 %.0f us, echo p50 %.0f us, own ~%.0f us (paired: p50 %.0f, p25-p75 %.0f-%.0f us); "
          "beside an echo that sends `started` too (p50 %.0f us): own p50 %.0f us paired"
          % (name, p50(t), e, p50(t) - e, p50(d), d[len(d) // 4], d[3 * len(d) // 4], p50(E2), p50(d2)))
for p, s in runners:
    send(s, {"type": "shutdown"})
    p.wait()
for p in (echo, echo2):
    p.kill()
    p.wait()
