#!/bin/sh
# t7036-term-limits.t - the security review's M8 for a job's terminal (docs/terminal.md,
# "Limits"; docs/security.md): a terminal WebSocket with no frame from the client and no output
# of the job for --term-idle-timeout is closed by tesseld (1001, the reason naming the option);
# pings from the client keep it open; a user holds at most --term-per-user upgraded connections
# (the next handshake is 429 too_many_terminals, and one closed makes room); all users together
# at most half of --max-connections (503), so that ordinary requests still get a connection.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
command -v python3 >/dev/null || missing "python3 is needed"
term_daemon --term-per-user 2 --max-connections 8
cat >"$TD/ws.py" <<'PY'
# ws.py URL TOKEN MODE ARG: a minimal WebSocket client of a job's terminal (RFC 6455 frames
# written here for the test only; tesseld's side is wslay).
import base64, os, socket, struct, sys, time, urllib.parse
url, token, mode, arg = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
u = urllib.parse.urlsplit(url)
def handshake():
    s = socket.create_connection((u.hostname, u.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Key: %s\r\n\r\n" % (u.path, u.hostname, u.port, token, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            break
        head += b
    code = int(head.split(b" ")[1])
    if code != 101:
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        body = b""
        while len(body) < n:
            body += s.recv(n - len(body))
        s.close()
        return code, body.decode(), None
    return code, "", s
def frame(op, payload=b""):
    mask = os.urandom(4)
    return bytes([0x80 | op, 0x80 | len(payload)]) + mask + bytes(
        c ^ mask[i % 4] for i, c in enumerate(payload))
def read_frame(s):
    h = s.recv(2)
    if len(h) < 2:
        return None, b""
    n = h[1] & 0x7f
    if n == 126:
        n = struct.unpack(">H", s.recv(2))[0]
    elif n == 127:
        n = struct.unpack(">Q", s.recv(8))[0]
    data = b""
    while len(data) < n:
        c = s.recv(n - len(data))
        if not c:
            break
        data += c
    return h[0] & 0x0f, data
def until_close(s, deadline):
    s.settimeout(0.2)
    while time.time() < deadline:
        try:
            op, data = read_frame(s)
        except socket.timeout:
            continue
        if op is None:
            return "eof"
        if op == 8:
            return "close %d %s" % (struct.unpack(">H", data[:2])[0], data[2:].decode())
    return "open"
if mode == "caps":  # open ARG connections, say each status; then an ordinary request
    held = []
    for i in range(int(arg)):
        code, body, s = handshake()
        print(code, body.strip())
        if s:
            held.append(s)
    c = socket.create_connection((u.hostname, u.port), timeout=10)
    c.sendall(("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               "Connection: close\r\n\r\n" % token).encode())
    print("plain", c.recv(64).split(b" ")[1].decode())
    held[0].sendall(frame(8, struct.pack(">H", 1000)))
    until_close(held[0], time.time() + 5)
    held[0].close()
    time.sleep(0.5)
    code, body, s = handshake()
    print("after", code)
elif mode == "idle":  # wait up to ARG s for tesseld's close
    code, body, s = handshake()
    print(code, until_close(s, time.time() + float(arg)))
elif mode == "ping":  # ping every 0.2 s for ARG s; then whether it is still open
    code, body, s = handshake()
    end = time.time() + float(arg)
    s.settimeout(0.2)
    state = "open"
    while time.time() < end and state == "open":
        s.sendall(frame(9, b"k"))
        try:
            op, data = read_frame(s)
            if op is None or op == 8:
                state = "closed"
        except socket.timeout:
            pass
    print(code, state)
PY

T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"tty\":true,\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = running ]'
python3 "$TD/ws.py" "$TD_URL/v1/jobs/$T/attach" "$NB" caps 3 >"$TD/caps" 2>&1
diag "$(cat "$TD/caps")"
is "$(sed -n 1p "$TD/caps") $(sed -n 2p "$TD/caps")" "101  101 " "nobody opens 2 terminal connections"
sed -n 3p "$TD/caps" | grep -q '^429 .*"too_many_terminals".*--term-per-user'
ok $? "the third is 429 too_many_terminals, naming --term-per-user"
is "$(sed -n 4p "$TD/caps")" "plain 200" "an ordinary request is answered meanwhile"
is "$(sed -n 5p "$TD/caps")" "after 101" "one closed, the next handshake is 101 again"
td_stop; ok $? "tesseld stops cleanly"

# The total: half of --max-connections (4 of 8), whatever the user's own cap.
td_start --fake-gpus 1xT4:8G --no-cgroups --term-per-user 16 --max-connections 8
T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"tty\":true,\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = running ]'
python3 "$TD/ws.py" "$TD_URL/v1/jobs/$T/attach" "$NB" caps 5 >"$TD/caps" 2>&1
diag "$(cat "$TD/caps")"
is "$(sed -n 1,4p "$TD/caps" | cut -c1-3 | tr '\n' ' ')" "101 101 101 101 " "4 terminal connections open"
sed -n 5p "$TD/caps" | grep -q '^503 .*"too_many_terminals".*--max-connections'
ok $? "the fifth is 503 too_many_terminals, naming --max-connections"
is "$(sed -n 6p "$TD/caps")" "plain 200" "an ordinary request is still answered"
td_stop; ok $? "tesseld stops cleanly"

# Idle: closed after --term-idle-timeout with no traffic; pings keep it open.
td_start --fake-gpus 1xT4:8G --no-cgroups --term-idle-timeout 1s
T=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"tty\":true,\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$T "" "$NB"; jget .state)" = running ]'
python3 "$TD/ws.py" "$TD_URL/v1/jobs/$T/attach" "$NB" idle 60 >"$TD/idle" 2>&1
is "$(cat "$TD/idle")" \
    "101 close 1001 idle for 1 s: no input and no output (--term-idle-timeout); the job goes on: attach again" \
    "a silent terminal connection is closed by tesseld (1001, the reason)"
grep -q "terminal of nobody closed after 1 s idle" "$TD/tesseld.log"; ok $? "tesseld's log says so"
python3 "$TD/ws.py" "$TD_URL/v1/jobs/$T/attach" "$NB" ping 4 >"$TD/ping" 2>&1
is "$(cat "$TD/ping")" "101 open" "a client that pings is not idle (4 s of pings, timeout 1 s)"
api GET /v1/jobs/$T "" "$NB"
is "$(jget .state)" running "the job goes on"
td_stop; ok $? "tesseld stops cleanly"
done_testing
