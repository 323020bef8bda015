"""The middleware's settings, read and checked once (a bad value stops the crawl with what was expected)."""

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

GATEWAY_PORT = 8888


@dataclass(frozen=True)
class EgressSettings:
    url: str
    token: str
    pool: str
    #: the gateway's proxy URL; None = lease a proxy per request through the API instead
    gateway: str | None
    block_codes: frozenset
    block_pattern: re.Pattern | None
    scale_on_open: int
    scale_timeout: float
    lease_wait: float

    def __repr__(self):  # never the token
        return f"EgressSettings(url={self.url!r}, pool={self.pool!r}, gateway={self.gateway!r})"


def read_settings(s):
    """EGRESS_* from a Scrapy Settings object."""
    url, token, pool = s.get("EGRESS_URL"), s.get("EGRESS_TOKEN"), s.get("EGRESS_POOL")
    missing = [k for k, v in (("EGRESS_URL", url), ("EGRESS_TOKEN", token), ("EGRESS_POOL", pool)) if not v]
    if missing:
        raise ValueError(f"EgressMiddleware needs {', '.join(missing)} in the Scrapy settings")
    pattern = s.get("EGRESS_BLOCK_PATTERN")
    scale = s.getint("EGRESS_SCALE_ON_OPEN", 0)
    if scale < 0:
        raise ValueError(f"EGRESS_SCALE_ON_OPEN must be a whole number of members, 0 or more (got {scale})")
    return EgressSettings(
        url=url.rstrip("/"),
        token=token,
        pool=pool,
        gateway=gateway_url(url, s.get("EGRESS_GATEWAY", True)),
        block_codes=frozenset(int(c) for c in s.getlist("EGRESS_BLOCK_CODES", [403, 429])),
        block_pattern=re.compile(pattern.encode()) if pattern else None,
        scale_on_open=scale,
        scale_timeout=s.getfloat("EGRESS_SCALE_TIMEOUT", 600.0),
        lease_wait=s.getfloat("EGRESS_LEASE_WAIT", 60.0),
    )


def gateway_url(api_url, value):
    """
    EGRESS_GATEWAY: unset or True = the gateway on the API's host, port 8888; a URL = that gateway;
    False, "" or "off" = no gateway (a lease per request). A URL with credentials is refused: the token
    goes in Proxy-Authorization, never in a URL.
    """
    if value is True or value in ("1", "true", "True", "on"):
        host = urlsplit(api_url).hostname
        return f"http://{host}:{GATEWAY_PORT}"
    if value in (False, None, "", "0", "false", "False", "off"):
        return None
    parts = urlsplit(str(value))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"EGRESS_GATEWAY must be the gateway's URL, e.g. http://127.0.0.1:8888 (got {value!r})")
    if parts.username or parts.password:
        raise ValueError("EGRESS_GATEWAY must not carry credentials: the middleware sends EGRESS_TOKEN in a header")
    return f"{parts.scheme}://{parts.netloc}"
