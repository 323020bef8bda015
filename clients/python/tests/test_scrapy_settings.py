"""The middleware's settings and block rules, with Scrapy's own Settings and Response (Debian's python3-scrapy)."""

import unittest

from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings

from egress_client.scrapy.blocks import gateway_counted, is_block, is_egress_answer, served_by
from egress_client.scrapy.settings import read_settings

BASE = {"EGRESS_URL": "http://10.0.0.5:8080/", "EGRESS_TOKEN": "tok-s", "EGRESS_POOL": "web"}


def response(status, body=b"", headers=None):
    return HtmlResponse("http://a.example/", status=status, body=body, headers=headers or {}, request=Request("http://a.example/"))


class SettingsTest(unittest.TestCase):
    def test_defaults(self):
        s = read_settings(Settings(BASE))
        self.assertEqual((s.url, s.gateway, s.block_codes, s.scale_on_open), ("http://10.0.0.5:8080", "http://10.0.0.5:8888", {403, 429}, 0))
        self.assertNotIn("tok-s", repr(s))

    def test_gateway_elsewhere_or_off(self):
        self.assertEqual(read_settings(Settings({**BASE, "EGRESS_GATEWAY": "http://gw:3128"})).gateway, "http://gw:3128")
        self.assertIsNone(read_settings(Settings({**BASE, "EGRESS_GATEWAY": False})).gateway)

    def test_refuses_credentials_in_the_gateway_url_and_missing_settings(self):
        with self.assertRaisesRegex(ValueError, "must not carry credentials"):
            read_settings(Settings({**BASE, "EGRESS_GATEWAY": "http://web:tok@gw:8888"}))
        with self.assertRaisesRegex(ValueError, "EGRESS_TOKEN, EGRESS_POOL"):
            read_settings(Settings({"EGRESS_URL": "http://x"}))

    def test_block_codes_and_pattern(self):
        s = read_settings(Settings({**BASE, "EGRESS_BLOCK_CODES": "403,503", "EGRESS_BLOCK_PATTERN": "captcha"}))
        self.assertEqual(s.block_codes, {403, 503})
        self.assertTrue(is_block(response(503), s.block_codes, s.block_pattern))
        self.assertTrue(is_block(response(200, b"<p>solve this captcha</p>"), s.block_codes, s.block_pattern))
        self.assertFalse(is_block(response(429), s.block_codes, s.block_pattern))


class BlockRulesTest(unittest.TestCase):
    def test_what_the_gateway_counted_itself(self):
        relayed = response(403, headers={"X-Egress-Proxy": "web-1"})
        self.assertEqual(served_by(relayed), "web-1")
        self.assertTrue(gateway_counted(relayed))
        self.assertFalse(gateway_counted(response(403)))  # inside a tunnel: the gateway saw no status
        self.assertFalse(gateway_counted(response(200, headers={"X-Egress-Proxy": "web-1"})))

    def test_egress_own_answers_are_never_blocks(self):
        self.assertTrue(is_egress_answer(response(429, headers={"X-Egress-Error": "target_busy"})))
        self.assertFalse(is_egress_answer(response(429)))
