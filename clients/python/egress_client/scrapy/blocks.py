"""What counts as a block, and which blocks the gateway has counted already."""

# The gateway always counts these as blocks on the plain-HTTP answers it relays (src/service/gateway/outcome.ts).
GATEWAY_BLOCK_STATUSES = (403, 429)


def is_egress_answer(response):
    """An answer egress gave itself (X-Egress-Error: nothing free, over a limit, ...), never the site's."""
    return b"X-Egress-Error" in response.headers


def is_block(response, codes, pattern):
    """The site blocked the request: a status in `codes`, or a body that matches `pattern`."""
    if response.status in codes:
        return True
    return bool(pattern is not None and pattern.search(response.body or b""))


def served_by(response):
    """The member that served it (X-Egress-Proxy, on answers the gateway relayed in plain HTTP)."""
    value = response.headers.get(b"X-Egress-Proxy")
    return value.decode("latin-1") if value else None


def gateway_counted(response):
    """
    True when the gateway released the member `blocked` itself: it relayed the answer (X-Egress-Proxy,
    plain HTTP) and the status is one it always treats as a block. Reporting it again would double it.
    """
    return served_by(response) is not None and response.status in GATEWAY_BLOCK_STATUSES
