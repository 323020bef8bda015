"""A lease as the client hands it out, the outcome rules, and the bounded wait on 503/429."""

from dataclasses import dataclass, field

from .transport import ApiError


class Blocked(Exception):
    """Raise it inside `with client.lease(...)` when the site blocked the proxy: released as `blocked`."""


@dataclass
class Lease:
    """One leased proxy. `url` is the proxy URL (it carries credentials when the pool has `auth`: keep it out of logs)."""

    id: str
    proxy_id: str
    url: str
    pool: str
    target: str | None = None
    session: str | None = None
    rebound: bool = False
    outcome: str = field(default="ok", repr=False)

    def mark_blocked(self):
        """The site blocked this proxy: the lease is released as `blocked` when the with-block ends."""
        self.outcome = "blocked"

    def __repr__(self):  # never the URL: it may carry the proxy's password
        return f"Lease(id={self.id!r}, proxy={self.proxy_id!r}, pool={self.pool!r}, target={self.target!r})"


def lease_from(body):
    lease = body["lease"]
    proxy = lease["proxy"]
    return Lease(
        id=lease["id"],
        proxy_id=proxy["id"],
        url=proxy["url"],
        pool=proxy["pool"],
        target=lease.get("target"),
        session=lease.get("session"),
        rebound=bool(lease.get("rebound", False)),
    )


def lease_body(pool, target, session, zone, ttl_seconds, where=None):
    """`where`: a member selector by label, e.g. {"country": "de"} (docs/api.md, "By label")."""
    fields = {
        "pool": pool,
        "target": target,
        "session": session,
        "zone": zone,
        "where": dict(where) if where else None,
        "ttlSeconds": ttl_seconds,
    }
    return {k: v for k, v in fields.items() if v is not None}


def outcome_of(lease, exc_type):
    """`blocked` for a Blocked exception or a lease marked blocked, `error` for any other exception, else `ok`."""
    if exc_type is not None and issubclass(exc_type, Blocked):
        return "blocked"
    if exc_type is not None:
        return "error"
    return lease.outcome


def wait_before_retry(err, waited, max_wait):
    """
    Seconds to sleep before asking again after `err`, or None to give up: only a 503 or 429 is waited
    on, for its Retry-After (1 s when absent), and never past `max_wait` seconds in all.
    """
    if not isinstance(err, ApiError) or err.status not in (429, 503):
        return None
    left = max_wait - waited
    if left <= 0:
        return None
    return min(err.retry_after if err.retry_after is not None else 1.0, left)


def released_already(err):
    """A release answered 404/410 means the lease ended already (expired, its proxy removed): done."""
    return isinstance(err, ApiError) and err.status in (404, 410)
