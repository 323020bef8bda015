"""The synchronous client: leases as context managers, block reports, pools and scale."""

import contextlib
import time

from . import transport
from .api import SETTLED, path_of
from .lease import lease_body, lease_from, outcome_of, released_already, wait_before_retry


class EgressClient:
    """
    The egress API with a token that has the scopes the calls need (`lease`; `discover` and `scale` for
    pools and scaling). `max_wait` bounds how long a lease waits on 503/429 as Retry-After says.
    """

    def __init__(self, url, token, *, max_wait=60.0, timeout=30.0):
        if not url or not token:
            raise ValueError("EgressClient needs the service's URL and a token")
        self.url = url.rstrip("/")
        self._token = token
        self.max_wait = max_wait
        self.timeout = timeout

    def __repr__(self):  # never the token
        return f"EgressClient({self.url!r})"

    def _call(self, name, body=None, **params):
        method, path = path_of(name, **params)
        return transport.call(self.url, self._token, method, path, body, self.timeout)[1]

    def acquire(self, pool=None, *, target=None, session=None, zone=None, where=None, ttl_seconds=None):
        """Leases one proxy, waiting on 503/429 as Retry-After says (at most `max_wait` s in all)."""
        body = lease_body(pool, target, session, zone, ttl_seconds, where)
        start = time.monotonic()
        while True:
            try:
                return lease_from(self._call("lease", body))
            except transport.ApiError as e:
                pause = wait_before_retry(e, time.monotonic() - start, self.max_wait)
                if pause is None:
                    raise
                time.sleep(pause)

    def release(self, lease, outcome="ok"):
        """Gives the lease back with its outcome; one that ended already (404/410) counts as released."""
        try:
            self._call("release", {"outcome": outcome}, id=lease.id)
        except transport.ApiError as e:
            if not released_already(e):
                raise

    @contextlib.contextmanager
    def lease(self, pool=None, *, target=None, session=None, zone=None, where=None, ttl_seconds=None):
        """
        `with client.lease("web", target="example.org") as proxy:` — released `ok` when the block ends,
        `blocked` after `proxy.mark_blocked()` or a `Blocked` raised in it, `error` for any other exception.
        """
        held = self.acquire(pool, target=target, session=session, zone=zone, where=where, ttl_seconds=ttl_seconds)
        try:
            yield held
        except BaseException as e:
            self.release(held, outcome_of(held, type(e)))
            raise
        self.release(held, outcome_of(held, None))

    def report_block(self, pool, target, session=None, proxy=None):
        """
        POST /v1/blocks: member `proxy` (the blocked answer's `X-Egress-Proxy`), which must have served this
        token's gateway requests for them lately, or else the one that served the last, rests for `target`.
        """
        body = {
            "pool": pool,
            "target": target,
            **({"session": session} if session else {}),
            **({"proxy": proxy} if proxy else {}),
        }
        return self._call("report_block", body)["blocked"]

    def pools(self):
        return self._call("pools")["pools"]

    def pool(self, name):
        found = [p for p in self.pools() if p["name"] == name]
        if not found:
            raise LookupError(f"egress has no pool {name!r}")
        return found[0]

    def scale(self, pool, replicas):
        """Sets the pool's desired replicas; returns the operation (GET it until it settles)."""
        return self._call("scale", {"replicas": replicas}, pool=pool)["operation"]

    def operation(self, op_id):
        return self._call("operation", id=op_id)["operation"]

    def wait_operation(self, op_id, timeout=600.0, every=0.5):
        """The operation once it settled (succeeded, failed or interrupted); TimeoutError past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            op = self.operation(op_id)
            if op["status"] in SETTLED:
                return op
            if time.monotonic() > deadline:
                raise TimeoutError(f"operation {op_id} still {op['status']} after {timeout:.0f} s")
            time.sleep(every)
