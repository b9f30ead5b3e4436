#!/usr/bin/env python3
"""standin.py - a stand-in inference server for the services' tests and benchmark
(docs/serving.md): serves one request at a time on 127.0.0.1:$PORT, each taking a fixed
service time, as a model on a GPU slice would: argv[1] is milliseconds ("5"), or milliseconds
by the simulated GPU's model ("A100=5,T4=15": a replica on an A100 serves in 5 ms).

  GET /health    200 "ok" at once (the proxy's health check); 500 once /sick was asked
  GET /sick      from now on, fail the health check (a replica that hangs, for the tests)
  anything else  200 after the service time; the body names the replica (TESSEL_JOB_ID)

The standard library's http.server, as a model server behaves: every connection accepted and
kept alive (HTTP/1.1; the proxy reuses its connections), a thread each, and the model's work
one request at a time (a lock held for the service time: the GPU serves one batch at a time,
the others queue); the health check is answered at once, busy or not."""
import http.server
import os
import sys
import threading
import time

JOB = os.environ.get("TESSEL_JOB_ID", "?")
GPU = threading.Lock()  # one request's work at a time


def gpu_model():
    """The model of the (simulated) GPU the replica was placed on: TESSEL_FAKE_GPUS
    ("[Nx]NAME:MEM,...") expanded, at the first index of CUDA_VISIBLE_DEVICES."""
    models = []
    for part in os.environ.get("TESSEL_FAKE_GPUS", "").split(","):
        if not part:
            continue
        n, _, rest = part.partition("x") if "x" in part.split(":")[0] else ("1", "", part)
        models += [rest.split(":")[0]] * int(n)
    try:
        return models[int(os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0])]
    except (ValueError, IndexError):
        return ""


def service_ms(arg):
    """argv[1]: milliseconds, or MODEL=MS,... by the GPU's model (the first that matches)."""
    if "=" not in arg:
        return float(arg)
    model = gpu_model()
    for pair in arg.split(","):
        name, _, ms = pair.partition("=")
        if name == model:
            return float(ms)
    raise SystemExit("standin: no service time for GPU model %r in %r" % (model, arg))


SERVICE_S = service_ms(sys.argv[1] if len(sys.argv) > 1 else "5") / 1000.0


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1: connections stay open between requests (every answer has its length).  The
    # head and the body are two writes: without TCP_NODELAY the body of a kept-alive
    # connection's answer waits for the client's delayed ACK (40 ms).
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def answer(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Replica", JOB)
        self.end_headers()
        self.wfile.write(data)

    sick = False

    def do_GET(self):
        if self.path == "/health":
            if Handler.sick:
                self.send_error(500, "sick")
            else:
                self.answer("ok\n")
            return
        if self.path == "/sick":  # from now on, fail the health check (tests)
            Handler.sick = True
            self.answer("sick\n")
            return
        # A sleep: the work is the GPU's, so the CPU stays free (on a shared machine a busy wait
        # would make the service time depend on the other processes).
        with GPU:
            time.sleep(SERVICE_S)
        auth = "auth" if self.headers.get("Authorization") else "noauth"
        self.answer("replica %s %s\n" % (JOB, auth))

    def do_POST(self):
        # The body is read whole (a kept-alive connection's next request starts after it).
        n = int(self.headers.get("Content-Length") or 0)
        if n > 0:
            self.rfile.read(n)
        self.do_GET()

    def log_message(self, fmt, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    # Requests wait for the lock while it serves one: a replica without a limit at the proxy
    # (concurrency 0) queues what it gets, as a model server does.
    request_queue_size = 1024
    daemon_threads = True


Server(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
