"""
requests with an egress lease per page: `with client.lease(...)` hands out a proxy and releases it with
what happened (ok; blocked when the site answered 403/429; error when the request failed). Run it:
  EGRESS_URL=http://127.0.0.1:8080 EGRESS_TOKEN=… EGRESS_POOL=web python3 requests_crawl.py URL…
"""

import os
import sys
from urllib.parse import urlsplit

import requests

from egress_client import EgressClient


def crawl(urls, client, pool):
    for url in urls:
        with client.lease(pool, target=urlsplit(url).hostname) as proxy:
            # proxy.url carries the member's credentials when the pool has `auth`: never print it.
            res = requests.get(url, proxies={"http": proxy.url, "https": proxy.url}, timeout=15)
            if res.status_code in (403, 429):
                proxy.mark_blocked()
            print(f"{res.status_code} {url} via {proxy.proxy_id} ({proxy.outcome})")


if __name__ == "__main__":
    client = EgressClient(os.environ["EGRESS_URL"], os.environ["EGRESS_TOKEN"])
    crawl(sys.argv[1:], client, os.environ.get("EGRESS_POOL", "web"))
