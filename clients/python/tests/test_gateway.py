import base64
import unittest

from egress_client.gateway import proxy_authorization, username


class UsernameTest(unittest.TestCase):
    def test_pool_and_session(self):
        self.assertEqual(username("web"), "web")
        self.assertEqual(username("web", "cart-42"), "web_session_cart-42")
        self.assertEqual(username(None, 7), "_session_7")

    def test_refuses_what_the_grammar_cannot_carry(self):
        for pool, session in (("Web", None), ("web", "a_b"), ("web", "x" * 65), ("web", "")):
            with self.assertRaises(ValueError):
                username(pool, session)

    def test_the_token_is_the_password(self):
        header = proxy_authorization("web_session_a", "tok")
        self.assertEqual(base64.b64decode(header.removeprefix("Basic ")), b"web_session_a:tok")
