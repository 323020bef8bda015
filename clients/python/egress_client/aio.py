"""
The asyncio client: the same calls as EgressClient, awaited. Standard library only, so each HTTP call
runs in a worker thread (asyncio.to_thread); waits on 503/429 are asyncio sleeps.
"""

import asyncio
import contextlib
import time

from . import transport
from .client import EgressClient
from .lease import lease_body, lease_from, outcome_of, released_already, wait_before_retry


class AsyncEgressClient:
    """`async with client.lease("web", target=...) as proxy:`, released with its outcome as in EgressClient."""

    def __init__(self, url, token, *, max_wait=60.0, timeout=30.0):
        self._sync = EgressClient(url, token, max_wait=max_wait, timeout=timeout)

    def __repr__(self):
        return f"AsyncEgressClient({self._sync.url!r})"

    async def acquire(self, pool=None, *, target=None, session=None, zone=None, where=None, ttl_seconds=None):
        body = lease_body(pool, target, session, zone, ttl_seconds, where)
        start = time.monotonic()
        while True:
            try:
                return lease_from(await asyncio.to_thread(self._sync._call, "lease", body))
            except transport.ApiError as e:
                pause = wait_before_retry(e, time.monotonic() - start, self._sync.max_wait)
                if pause is None:
                    raise
                await asyncio.sleep(pause)

    async def release(self, lease, outcome="ok"):
        try:
            await asyncio.to_thread(self._sync._call, "release", {"outcome": outcome}, id=lease.id)
        except transport.ApiError as e:
            if not released_already(e):
                raise

    @contextlib.asynccontextmanager
    async def lease(self, pool=None, *, target=None, session=None, zone=None, where=None, ttl_seconds=None):
        held = await self.acquire(pool, target=target, session=session, zone=zone, where=where, ttl_seconds=ttl_seconds)
        try:
            yield held
        except BaseException as e:
            await self.release(held, outcome_of(held, type(e)))
            raise
        await self.release(held, outcome_of(held, None))

    async def report_block(self, pool, target, session=None, proxy=None):
        return await asyncio.to_thread(self._sync.report_block, pool, target, session, proxy)

    async def pools(self):
        return await asyncio.to_thread(self._sync.pools)
