"""Scrapy integration: `EgressMiddleware`, a downloader middleware that sends every request through egress."""

from .middleware import EgressMiddleware

__all__ = ["EgressMiddleware"]
