#!/usr/bin/env python3
"""standin.py - a stand-in inference server for the services' tests and benchmark
(docs/serving.md): serves one request at a time on 127.0.0.1:$PORT, each taking a fixed
service time (argv[1], milliseconds), as a model on a GPU slice would.

  GET /health    200 "ok" at once (the proxy's health check)
  anything else  200 after the service time; the body names the replica (TESSEL_JOB_ID)

The standard library's http.server: one thread, one request at a time (no ThreadingMixIn),
one request per connection."""
import http.server
import os
import sys
import time

SERVICE_S = float(sys.argv[1]) / 1000.0 if len(sys.argv) > 1 else 0.005
JOB = os.environ.get("TESSEL_JOB_ID", "?")


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.0: the connection closes after each answer.  A server that serves one connection
    # at a time must not keep one open idle (the proxy's pool would hold it while the next
    # request waits on a new connection).
    protocol_version = "HTTP/1.0"

    def answer(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Replica", JOB)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.answer("ok\n")
            return
        # A busy wait: the time a replica is busy is its own, as a GPU's would be.
        end = time.monotonic() + SERVICE_S
        while time.monotonic() < end:
            pass
        auth = "auth" if self.headers.get("Authorization") else "noauth"
        self.answer("replica %s %s\n" % (JOB, auth))

    do_POST = do_GET

    def log_message(self, fmt, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
