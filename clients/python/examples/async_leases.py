"""
The asyncio client: leases released with their outcome, and a lease that waits while every member is
busy (503 with Retry-After). Run it:
  EGRESS_URL=http://127.0.0.1:8080 EGRESS_TOKEN=… EGRESS_POOL=web python3 async_leases.py
"""

import asyncio
import os
import time

from egress_client import AsyncEgressClient, Blocked


async def main():
    client = AsyncEgressClient(os.environ["EGRESS_URL"], os.environ["EGRESS_TOKEN"], max_wait=30)
    pool = os.environ.get("EGRESS_POOL", "web")
    start = time.monotonic()
    async with client.lease(pool, target="ok.example") as proxy:
        print(f"ok via {proxy.proxy_id} after {time.monotonic() - start:.0f}s")
    try:
        async with client.lease(pool, target="blocked.example") as proxy:
            raise Blocked("the site answered 403")
    except Blocked:
        print(f"blocked via {proxy.proxy_id}")
    try:
        async with client.lease(pool, target="error.example") as proxy:
            raise ConnectionError("the proxy reset the connection")
    except ConnectionError:
        print(f"error via {proxy.proxy_id}")


if __name__ == "__main__":
    asyncio.run(main())
