"""The gateway's proxy username (src/service/gateway/username.ts) and its Proxy-Authorization header."""

import base64
import re

# A session key as the gateway and POST /v1/blocks both take it (the block report allows 64 characters).
SESSION_KEY = re.compile(r"^[A-Za-z0-9.~-]{1,64}$")
POOL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def username(pool=None, session=None):
    """`<pool>[_session_<key>]`; the target defaults to the request's host at the gateway."""
    if pool is not None and not POOL.match(pool):
        raise ValueError(f"{pool!r} is not a pool name (lower-case letters, digits and '-')")
    if session is None:
        return pool or ""
    session = str(session)
    if not SESSION_KEY.match(session):
        raise ValueError(f"egress session {session[:64]!r} is not 1–64 letters, digits, '-', '.' or '~'")
    return f"{pool or ''}_session_{session}"


def proxy_authorization(user, token):
    """`Basic base64(user:token)`: the token is the password, as the gateway reads it."""
    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
