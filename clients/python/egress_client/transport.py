"""
One JSON call to the egress API with urllib. The token travels in the Authorization header only, never
in a URL, and never appears in an error message or a log line. Proxies from the environment are ignored
(an HTTP_PROXY would otherwise see the token).
"""

import json
import urllib.error
import urllib.request

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ApiError(Exception):
    """An answer of 400 or more: its status, the API's error code and message, and Retry-After (seconds)."""

    def __init__(self, method, path, status, code, message, retry_after=None):
        super().__init__(f"{method} {path}: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


def retry_after_seconds(value):
    """Retry-After as seconds (its delay-seconds form); None when absent or not a number."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def call(base_url, token, method, path, body=None, timeout=30.0):
    """Sends one request; returns (status, parsed JSON body). Raises ApiError on a status of 400 or more."""
    if not path.startswith("/"):
        raise ValueError(f"the API path must start with / (got {path!r})")
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base_url.rstrip("/") + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(req, timeout=timeout) as res:
            return res.status, _json(res.read())
    except urllib.error.HTTPError as e:
        with e:
            err = (_json(e.read()) or {}).get("error") or {}
        raise ApiError(
            method,
            path,
            e.code,
            err.get("code", "http_error"),
            err.get("message", e.reason),
            retry_after_seconds(e.headers.get("Retry-After")),
        ) from None


def _json(raw):
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
