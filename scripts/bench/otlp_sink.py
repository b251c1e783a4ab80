"""An OTLP/HTTP sink for scripts/bench.sh --otlp: answers every POST /v1/traces 200 with an empty
`ExportTraceServiceResponse` (zero bytes, protobuf) without decoding it, so the servers measured export
every span as they would to a healthy backend. Counts requests and bytes; prints them when it ends
(SIGTERM). Usage: python3 otlp_sink.py PORT (127.0.0.1 only)."""

import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {"requests": 0, "bytes": 0}
lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        with lock:
            counts["requests"] += 1
            counts["bytes"] += n
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
server.serve_forever()
print(f"otlp sink: {counts['requests']} export requests, {counts['bytes']} bytes", file=sys.stderr)
