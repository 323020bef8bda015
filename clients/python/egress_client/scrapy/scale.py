"""EGRESS_SCALE_ON_OPEN: raise the pool when the spider opens, wait for healthy members, give them back on close."""

import logging
import time

from ..transport import ApiError

log = logging.getLogger("egress_client.scrapy")


class ScaleOnOpen:
    def __init__(self, client, pool, members, timeout, stats):
        self.client, self.pool, self.members, self.timeout, self.stats = client, pool, members, timeout, stats
        #: the desired count before the spider raised it; None when it did not
        self.previous = None

    def open(self):
        pool = self.client.pool(self.pool)
        if pool.get("autoscale") or not pool["scalable"]:
            why = "autoscales" if pool.get("autoscale") else "cannot be scaled"
            log.info("egress pool %s %s: EGRESS_SCALE_ON_OPEN leaves it as it is", self.pool, why)
            self.stats.set_value("egress/scale", f"skipped: {why}")
            return
        if pool["desired"] < self.members:
            if not self._raise(pool["desired"]):
                return
        self._wait_healthy()

    def _raise(self, desired):
        try:
            op = self.client.scale(self.pool, self.members)
        except ApiError as e:
            if e.code != "autoscaled":
                raise
            self.stats.set_value("egress/scale", "skipped: autoscales")
            return False
        self.previous = desired
        log.info("egress pool %s: %d -> %d members for this spider", self.pool, desired, self.members)
        done = self.client.wait_operation(op["id"], self.timeout)
        if done["status"] != "succeeded":
            raise RuntimeError(f"scaling egress pool {self.pool} to {self.members} {done['status']}: {done.get('error')}")
        self.stats.set_value("egress/scale", f"{desired}->{self.members}")
        return True

    def _wait_healthy(self):
        deadline = time.monotonic() + self.timeout
        while (healthy := self.client.pool(self.pool)["healthy"]) < self.members:
            if time.monotonic() > deadline:
                raise TimeoutError(f"egress pool {self.pool}: {healthy} of {self.members} members healthy")
            time.sleep(0.5)

    def close(self):
        if self.previous is None:
            return
        self.client.scale(self.pool, self.previous)
        log.info("egress pool %s: back to %d members", self.pool, self.previous)
        self.previous = None
