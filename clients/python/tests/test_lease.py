import unittest

from egress_client import ApiError, Blocked, EgressClient, Lease
from egress_client.lease import lease_body, outcome_of, released_already, wait_before_retry


def busy(status, retry_after):
    return ApiError("POST", "/v1/leases", status, "none_available", "nothing free", retry_after)


class WaitTest(unittest.TestCase):
    def test_waits_as_retry_after_says_on_503_and_429(self):
        self.assertEqual(wait_before_retry(busy(503, 2.0), 0, 60), 2.0)
        self.assertEqual(wait_before_retry(busy(429, 1.0), 0, 60), 1.0)

    def test_one_second_without_retry_after(self):
        self.assertEqual(wait_before_retry(busy(503, None), 0, 60), 1.0)

    def test_bounded_by_max_wait(self):
        self.assertEqual(wait_before_retry(busy(503, 30.0), 55, 60), 5)
        self.assertIsNone(wait_before_retry(busy(503, 1.0), 60, 60))

    def test_other_errors_are_not_waited_on(self):
        self.assertIsNone(wait_before_retry(busy(404, 1.0), 0, 60))
        self.assertIsNone(wait_before_retry(ValueError("x"), 0, 60))


class OutcomeTest(unittest.TestCase):
    def lease(self):
        return Lease(id="l1", proxy_id="web-0", url="http://u:secret@127.0.0.1:1", pool="web")

    def test_ok_blocked_error(self):
        held = self.lease()
        self.assertEqual(outcome_of(held, None), "ok")
        self.assertEqual(outcome_of(held, Blocked), "blocked")
        self.assertEqual(outcome_of(held, RuntimeError), "error")
        held.mark_blocked()
        self.assertEqual(outcome_of(held, None), "blocked")

    def test_a_lease_never_shows_its_url(self):
        self.assertNotIn("secret", repr(self.lease()))

    def test_ended_leases_count_as_released(self):
        self.assertTrue(released_already(ApiError("POST", "/x", 410, "lease_expired", "", None)))
        self.assertFalse(released_already(ApiError("POST", "/x", 503, "not_ready", "", None)))

    def test_lease_body_carries_a_label_selector(self):
        self.assertEqual(
            lease_body(None, None, "s1", None, None, {"country": "de"}),
            {"session": "s1", "where": {"country": "de"}},
        )
        self.assertNotIn("where", lease_body("web", None, None, None, None, {}))

    def test_lease_body_leaves_out_what_is_unset(self):
        self.assertEqual(lease_body("web", "a.example", None, None, 30), {"pool": "web", "target": "a.example", "ttlSeconds": 30})


class ClientTest(unittest.TestCase):
    def test_never_shows_its_token(self):
        self.assertNotIn("tok-secret", repr(EgressClient("http://127.0.0.1:1", "tok-secret")))

    def test_needs_url_and_token(self):
        with self.assertRaises(ValueError):
            EgressClient("http://127.0.0.1:1", "")
