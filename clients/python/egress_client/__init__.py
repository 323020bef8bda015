"""Client for the egress proxy service: leases (sync and asyncio) and, in egress_client.scrapy, a Scrapy middleware."""

from .aio import AsyncEgressClient
from .client import EgressClient
from .lease import Blocked, Lease
from .transport import ApiError

__all__ = ["ApiError", "AsyncEgressClient", "Blocked", "EgressClient", "Lease"]
