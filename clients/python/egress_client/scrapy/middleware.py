"""
EgressMiddleware: every request through egress (its gateway by default, or a lease per request), a
session per `request.meta["egress_session"]`, blocks reported for the member that served them and
retried on another member within Scrapy's retry budget, and counts in the crawl's stats.
"""

import logging
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.downloadermiddlewares.retry import get_retry_request
from twisted.internet.threads import deferToThread

from .. import gateway
from ..client import EgressClient
from .blocks import gateway_counted, is_block, is_egress_answer, served_by
from .scale import ScaleOnOpen
from .settings import read_settings

log = logging.getLogger("egress_client.scrapy")
LEASE = "_egress_lease"  # request.meta: the lease a request was sent under (lease mode)


class EgressMiddleware:
    """Enable it before Scrapy's HttpProxyMiddleware (750), e.g. `{"egress_client.scrapy.EgressMiddleware": 740}`."""

    def __init__(self, settings, stats, retry_enabled=True):
        self.cfg = settings
        self.stats = stats
        self.retry_enabled = retry_enabled
        self.client = EgressClient(settings.url, settings.token, max_wait=settings.lease_wait)
        self.scaler = None
        if settings.scale_on_open:
            self.scaler = ScaleOnOpen(self.client, settings.pool, settings.scale_on_open, settings.scale_timeout, stats)

    @classmethod
    def from_crawler(cls, crawler):
        mw = cls(read_settings(crawler.settings), crawler.stats, crawler.settings.getbool("RETRY_ENABLED", True))
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    def spider_opened(self, spider):
        log.info("egress: pool %s through %s", self.cfg.pool, self.cfg.gateway or "leases")
        return deferToThread(self.scaler.open) if self.scaler else None

    def spider_closed(self, spider):
        return deferToThread(self.scaler.close) if self.scaler else None

    # -- requests -------------------------------------------------------------------------------------

    def process_request(self, request, spider):
        if request.meta.get("egress") is False:  # this request goes direct
            return None
        self.stats.inc_value("egress/requests")
        session = request.meta.get("egress_session")
        if self.cfg.gateway is None:
            return self._lease_for(request, session)
        user = gateway.username(self.cfg.pool, session)
        request.meta["proxy"] = self.cfg.gateway
        request.headers[b"Proxy-Authorization"] = gateway.proxy_authorization(user, self.cfg.token)
        return None

    def _lease_for(self, request, session):
        target = urlsplit(request.url).hostname
        d = deferToThread(self.client.acquire, self.cfg.pool, target=target, session=session)

        def use(lease):
            request.meta[LEASE] = lease
            request.meta["proxy"] = lease.url  # HttpProxyMiddleware turns its credentials into a header
            request.headers.pop(b"Proxy-Authorization", None)

        return d.addCallback(use)

    # -- answers --------------------------------------------------------------------------------------

    def process_response(self, request, response, spider):
        if request.meta.get("egress") is False or is_egress_answer(response):
            return self._released(request, response, "ok")
        if not is_block(response, self.cfg.block_codes, self.cfg.block_pattern):
            return self._released(request, response, "ok")
        self.stats.inc_value("egress/blocked")
        member = served_by(response) or getattr(request.meta.get(LEASE), "proxy_id", None)
        log.info("egress: %s blocked (%d) through member %s", request.url, response.status, member or "?")
        retry = self._retry(request, spider)
        if LEASE in request.meta:
            return self._released(request, retry or response, "blocked")
        if gateway_counted(response):
            return retry or response
        return deferToThread(self._report, request, response).addBoth(lambda _: retry or response)

    def process_exception(self, request, exception, spider):
        if LEASE in request.meta:
            return self._released(request, None, "error")
        return None

    def _retry(self, request, spider):
        if not self.retry_enabled or request.meta.get("dont_retry"):
            return None
        retry = get_retry_request(request, spider=spider, reason="egress_blocked")
        if retry is not None:
            retry.meta.pop(LEASE, None)
            self.stats.inc_value("egress/retries")
        return retry

    def _released(self, request, result, outcome):
        lease = request.meta.pop(LEASE, None)
        if lease is None:
            return result
        return deferToThread(self.client.release, lease, outcome).addBoth(lambda _: result)

    def _report(self, request, response):
        """POST /v1/blocks for a block the gateway could not see (inside a tunnel, a pattern, another code)."""
        target = urlsplit(request.url).hostname
        # The member, when the answer names it (plain http): egress checks it served this request's key, so
        # the right member rests even with other requests to the site served after this one.
        member = served_by(response)
        try:
            self.client.report_block(self.cfg.pool, target, request.meta.get("egress_session"), member)
        except Exception as e:  # a report that fails must not fail the crawl
            log.warning("egress: could not report the block of %s: %s", request.url, e)
            return
        self.stats.inc_value("egress/block_reports")
