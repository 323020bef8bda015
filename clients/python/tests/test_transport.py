"""The transport against a real loopback HTTP server: where the token goes, errors, Retry-After waits."""

import http.server
import json
import threading
import time
import unittest

from egress_client import ApiError, EgressClient


class Api(http.server.BaseHTTPRequestHandler):
    seen = []  # (method, path, authorization)
    busy = 0  # answer this many lease requests 503 with Retry-After: 1

    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        Api.seen.append((self.command, self.path, self.headers.get("Authorization")))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/leases" and Api.busy > 0:
            Api.busy -= 1
            return self.answer(503, {"error": {"code": "none_available", "message": "busy"}}, [("Retry-After", "1")])
        if self.path == "/v1/leases":
            proxy = {"id": "web-0", "pool": "web", "url": "http://127.0.0.1:9"}
            return self.answer(201, {"lease": {"id": "l1", "proxy": proxy}})
        if self.path == "/v1/leases/l1/release":
            return self.answer(410, {"error": {"code": "lease_expired", "message": "ended"}})
        self.answer(404, {"error": {"code": "not_found", "message": "no route"}})


class TransportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        Api.seen.clear()

    def test_the_token_goes_in_the_header_only(self):
        with EgressClient(self.url, "tok-1").lease("web") as proxy:
            self.assertEqual(proxy.proxy_id, "web-0")
        self.assertEqual([s[2] for s in Api.seen], ["Bearer tok-1", "Bearer tok-1"])
        self.assertTrue(all("tok-1" not in s[1] for s in Api.seen))

    def test_waits_on_503_as_retry_after_says(self):
        Api.busy = 1
        start = time.monotonic()
        EgressClient(self.url, "tok-1").acquire("web")
        self.assertGreaterEqual(time.monotonic() - start, 0.9)
        self.assertEqual(len(Api.seen), 2)

    def test_gives_up_past_max_wait(self):
        Api.busy = 5
        with self.assertRaises(ApiError) as got:
            EgressClient(self.url, "tok-1", max_wait=0.5).acquire("web")
        self.assertEqual((got.exception.status, got.exception.code), (503, "none_available"))
        Api.busy = 0

    def test_errors_name_the_route_and_never_the_token(self):
        with self.assertRaises(ApiError) as got:
            EgressClient(self.url, "tok-1").report_block("web", "a.example")
        self.assertIn("POST /v1/blocks: 404 not_found", str(got.exception))
        self.assertNotIn("tok-1", str(got.exception))
