"""
A Scrapy crawl through egress: every page of one site, following its links, through the gateway, with
blocks reported and retried on another member. Run it:
  EGRESS_URL=http://127.0.0.1:8080 EGRESS_TOKEN=… EGRESS_POOL=web python3 scrapy_crawl.py http://127.0.0.1:8000/
(EGRESS_GATEWAY=http://127.0.0.1:8888 when the gateway is elsewhere; EGRESS_SCALE_ON_OPEN=N to raise the pool.)
"""

import os
import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start, **kw):
        super().__init__(**kw)
        self.start_urls = [start]
        self.allowed_domains = [start.split("/")[2].split(":")[0]]

    def parse(self, response):
        yield {"url": response.url, "status": response.status}
        yield from response.follow_all(css="a", callback=self.parse)


def settings():
    env = os.environ
    s = {
        "DOWNLOADER_MIDDLEWARES": {"egress_client.scrapy.EgressMiddleware": 740},
        "EGRESS_URL": env["EGRESS_URL"],
        "EGRESS_TOKEN": env["EGRESS_TOKEN"],  # sent in headers only, never logged
        "EGRESS_POOL": env.get("EGRESS_POOL", "web"),
        "EGRESS_BLOCK_PATTERN": env.get("EGRESS_BLOCK_PATTERN"),
        "EGRESS_SCALE_ON_OPEN": int(env.get("EGRESS_SCALE_ON_OPEN", "0")),
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
    if "EGRESS_GATEWAY" in env:
        s["EGRESS_GATEWAY"] = env["EGRESS_GATEWAY"]
    return s


def main(start):
    process = CrawlerProcess(settings())
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, start=start)
    process.start()
    stats = crawler.stats.get_stats()
    print(f"pages {stats.get('item_scraped_count', 0)}")
    for key in ("egress/requests", "egress/blocked", "egress/retries", "egress/block_reports"):
        print(f"{key} {stats.get(key, 0)}")


if __name__ == "__main__":
    main(sys.argv[1])
