#!/usr/bin/env python3
"""Resource exhaustion against a real tallyd (issue 17, docs/SECURITY.md).

Starts one tallyd (temporary data dir, free port, durability none) and runs
each attack from issue 17 in turn for a bounded time while a probe client
keeps doing static reads on its own connection. Prints, per attack, tallyd's
resident memory (VmRSS, peak of samples every 0.2 s) and the probe's worst
read latency, so one can see that memory stays bounded and other clients are
still served.

    bench/exhaustion.py                   # every attack
    bench/exhaustion.py --only no-reader  # one of: no-reader partial-frames
                                          #   big-transaction fbf-buckets
                                          #   idle-sockets huge-frames
    bench/exhaustion.py --only huge-frames --frame-connections 8 --frame-mb 200
    BUILD_DIR=/tmp/build bench/exhaustion.py
"""
import argparse, os, resource, shutil, signal, socket, struct, subprocess, sys, tempfile, threading, time

BUILD_DIR = os.environ.get("BUILD_DIR", "build")

# ---- a minimal encoder for the few AntidoteDB messages used here -----------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, wire, payload):
    return varint((num << 3) | wire) + payload

def ld(num, data):  # length-delimited
    return field(num, 2, varint(len(data)) + data)

def zigzag(n):
    return (n << 1) ^ (n >> 63)

def bound(bucket, key):  # ApbBoundObject: key=1, type=2 (COUNTER=3), bucket=3
    return ld(1, key.encode()) + field(2, 0, varint(3)) + ld(3, bucket.encode())

def op_id(client, seq):  # ApbTallyOpId: client=1, seq=2 (uint64)
    return field(1, 0, varint(client)) + field(2, 0, varint(seq))

def counter_update(inc, oid=None):  # ApbUpdateOperation{counterop=1{inc=1, tally_op_id=100}}
    cu = field(1, 0, varint(zigzag(inc)))
    if oid is not None:
        cu += ld(100, oid)
    return ld(1, cu)

def update_op(bucket, key, inc, oid=None):  # ApbUpdateOp{boundobject=1, operation=2}
    return ld(1, bound(bucket, key)) + ld(2, counter_update(inc, oid))

def frame(code, body):
    return struct.pack(">I", len(body) + 1) + bytes([code]) + body

def static_read(bucket, key):  # 123: transaction=1 (empty start), objects=2
    return frame(123, ld(1, b"") + ld(2, bound(bucket, key)))

def static_update(ups):  # 122: transaction=1, updates=2...
    return frame(122, ld(1, b"") + b"".join(ld(2, u) for u in ups))

def start_tx():
    return frame(119, b"")

def update_objects(ops, descriptor):  # 118: updates=1..., transaction_descriptor=2
    return frame(118, b"".join(ld(1, u) for u in ops) + ld(2, descriptor))

def read_frame(sock):
    head = recv_n(sock, 4)
    if len(head) < 4:
        return None
    (n,) = struct.unpack(">I", head)
    body = recv_n(sock, n)
    return None if len(body) < n else (body[0], body[1:])

def recv_n(sock, n):
    out = b""
    while len(out) < n:
        b = sock.recv(n - len(out))
        if not b:
            break
        out += b
    return out

def descriptor_of(body):  # ApbStartTransactionResp: success=1, transaction_descriptor=2
    i = 0
    while i < len(body):
        tag = body[i]; i += 1
        if tag == 0x08:
            i += 1
        elif tag == 0x12:
            n = 0; shift = 0
            while True:
                b = body[i]; i += 1
                n |= (b & 0x7F) << shift; shift += 7
                if not b & 0x80:
                    break
            return body[i:i + n]
        else:
            return None
    return None

# ---- the node, its memory, and a probe client ------------------------------
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

class Probe(threading.Thread):
    """Static reads on its own connection; records the worst latency."""
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.worst, self.reads, self.failed = port, False, 0.0, 0, 0
    def run(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        s.settimeout(30)
        while not self.stop:
            t = time.monotonic()
            try:
                s.sendall(static_read("probe", "k"))
                if read_frame(s) is None:
                    raise OSError("closed")
                self.reads += 1
            except OSError:
                self.failed += 1
                time.sleep(0.1)
                try:
                    s = socket.create_connection(("127.0.0.1", self.port)); s.settimeout(30)
                except OSError:
                    pass
                continue
            self.worst = max(self.worst, time.monotonic() - t)
            time.sleep(0.01)

def measure(pid, port, name, attack, seconds):
    probe = Probe(port); probe.start()
    base = rss_kib(pid); peak = base
    done = threading.Event()
    def run():
        try:
            attack(seconds)
        finally:
            done.set()
    t = threading.Thread(target=run, daemon=True); t.start()
    end = time.monotonic() + seconds + 30
    while not done.is_set() and time.monotonic() < end:
        peak = max(peak, rss_kib(pid)); time.sleep(0.2)
    peak = max(peak, rss_kib(pid))
    probe.stop = True; probe.join(5)
    print(f"{name:18s} RSS before {base/1024:7.0f} MiB  peak {peak/1024:7.0f} MiB  "
          f"probe reads {probe.reads:5d}  worst probe read {probe.worst*1000:8.1f} ms  "
          f"probe failures {probe.failed}", flush=True)

# ---- the attacks -------------------------------------------------------------
def no_reader(port):
    def attack(seconds):
        s = socket.create_connection(("127.0.0.1", port)); s.setblocking(False)
        msg = static_read("bench", "x") * 1000
        sent, end = 0, time.monotonic() + seconds
        while time.monotonic() < end and sent < 500_000:
            try:
                n = s.send(msg)
                sent += n // len(static_read("bench", "x"))
            except BlockingIOError:
                time.sleep(0.01)  # the node stopped reading us: back-pressure
        print(f"  no-reader: {sent} requests written in {seconds} s before the node pushed back")
        s.close()
    return attack

def partial_frames(port):
    def attack(seconds):
        socks, refused = [], 0
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", port)); s.settimeout(2)
                s.sendall(struct.pack(">I", 15 << 20) + bytes([123]))
                for _ in range(14):
                    s.sendall(chunk)
                socks.append(s)
            except OSError:
                refused += 1
        print(f"  partial-frames: {len(socks)} connections hold 14 MiB each, {refused} refused or closed")
        time.sleep(min(seconds, 3))
        for s in socks:
            s.close()
    return attack

def register_update(bucket, key, value):  # ApbUpdateOp{bound LWWREG=5, operation{regop=3{value=1}}}
    b = ld(1, key.encode()) + field(2, 0, varint(5)) + ld(3, bucket.encode())
    return ld(1, b) + ld(2, ld(3, ld(1, value)))

def huge_frames(port, connections, frame_mb):
    """`connections` clients each send one whole static update of about
    `frame_mb` MB (registers of 200 KB, like antidote_ts_client's big
    batch) at the same time and wait for the answer. The request memory
    budget (--max-request-memory) admits what fits and refuses the rest
    with an error; nothing may kill the node."""
    def attack(seconds):
        value = b"r" * 200_000
        n = max(1, frame_mb * 1_000_000 // len(value))
        msg = static_update([register_update("huge", f"reg{i}", value) for i in range(n)])
        results = [None] * connections
        def one(i):
            try:
                s = socket.create_connection(("127.0.0.1", port)); s.settimeout(max(60, seconds))
                try:
                    s.sendall(msg)
                except OSError:
                    pass  # refused and closed mid-send: the answer is still there
                got = read_frame(s)
                if got is None:
                    results[i] = "closed"
                elif got[0] == 0:  # ApbErrorResp
                    results[i] = "error"
                else:
                    results[i] = "served"
                s.close()
            except OSError as e:
                results[i] = f"failed: {e}"
        t0 = time.monotonic()
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(connections)]
        for t in threads: t.start()
        for t in threads: t.join(seconds + 120)
        counts = {}
        for r in results:
            counts[r] = counts.get(r, 0) + 1
        print(f"  huge-frames: {connections} frames of {len(msg) / 1e6:.0f} MB at once: "
              + ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
              + f" in {time.monotonic() - t0:.1f} s")
    return attack

def big_transaction(port):
    def attack(seconds):
        s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30)
        s.sendall(start_tx())
        code, body = read_frame(s)
        desc = descriptor_of(body)
        ups = [update_op("bench", f"t{i}", 1) for i in range(1000)]
        msg = update_objects(ups, desc)
        ok = refused = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end and ok + refused < 10_000:
            s.sendall(msg)
            code, _ = read_frame(s)
            if code == 111:
                ok += 1
            else:
                refused += 1
                break
        print(f"  big-transaction: {ok * 1000} updates buffered, then {'refused' if refused else 'no refusal'}")
        s.close()
    return attack

def fbf_buckets(port, buckets):
    def attack(seconds):
        s = socket.create_connection(("127.0.0.1", port)); s.settimeout(30)
        end = time.monotonic() + seconds
        n = 0
        for b in range(buckets):
            if time.monotonic() > end:
                break
            s.sendall(static_update([update_op(f"bucket{b}", "k", 0, op_id(4242, b + 1))]))
            read_frame(s)
            n += 1
        print(f"  fbf-buckets: {n} buckets touched with an op id")
        s.close()
    return attack

def idle_sockets(port, count):
    """`count` sockets (the node's --max-connections) connect and never send
    a byte; then a newcomer connects every 0.5 s and reads once. Before
    --evict-idle-after-ms every newcomer was shut out until the idle timeout
    (300 s)."""
    def attack(seconds):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < count + 64:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
        idle = []
        for _ in range(count):
            try:
                idle.append(socket.create_connection(("127.0.0.1", port)))
            except OSError:
                break
        start = time.monotonic(); end = start + seconds
        tried = served = 0; first = None
        while time.monotonic() < end:
            tried += 1
            try:
                s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
                s.sendall(static_read("bench", "newcomer"))
                if read_frame(s) is not None:
                    served += 1
                    if first is None:
                        first = time.monotonic() - start
                s.close()
            except OSError:
                pass
            time.sleep(0.5)
        closed = 0
        for s in idle:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            s.close()
        first_text = "never" if first is None else f"first after {first:.1f} s"
        print(f"  idle-sockets: {len(idle)} idle sockets; newcomers served {served} of {tried} "
              f"({first_text}); idle sockets closed to make room: {closed}")
    return attack

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--buckets", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=1024,
                    help="idle sockets for idle-sockets (tallyd's --max-connections)")
    ap.add_argument("--frame-connections", type=int, default=8,
                    help="clients of huge-frames, each sending one big frame at once")
    ap.add_argument("--frame-mb", type=int, default=200,
                    help="size of each huge-frames frame in MB (tallyd's default cap: 268 MB)")
    ap.add_argument("--tallyd-arg", action="append", default=[],
                    help="an extra tallyd argument (repeat for more), e.g. --tallyd-arg=--max-request-memory=536870912")
    a = ap.parse_args()
    tallyd = os.path.join(BUILD_DIR, "bin", "tallyd")
    if not os.access(tallyd, os.X_OK):
        sys.exit(f"exhaustion: {tallyd} not found (scripts/setup.sh builds it)")
    tmp = tempfile.mkdtemp(prefix="tally-exhaustion-")
    port = free_port()
    node = subprocess.Popen([tallyd, "--port", str(port), "--data-dir", tmp + "/data",
                             "--durability", "none", "--log-level", "warn"] + a.tallyd_arg,
                            stdout=subprocess.DEVNULL, stderr=open(tmp + "/tallyd.log", "w"))
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close(); break
            except OSError:
                time.sleep(0.1)
        attacks = {
            "no-reader": no_reader(port),
            "partial-frames": partial_frames(port),
            "big-transaction": big_transaction(port),
            "fbf-buckets": fbf_buckets(port, a.buckets),
            "idle-sockets": idle_sockets(port, a.connections),
            "huge-frames": huge_frames(port, a.frame_connections, a.frame_mb),
        }
        for name, attack in attacks.items():
            if a.only and a.only != name:
                continue
            measure(node.pid, port, name, attack, a.seconds)
    finally:
        node.send_signal(signal.SIGTERM)
        try:
            node.wait(30)
        except subprocess.TimeoutExpired:
            node.kill()
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
