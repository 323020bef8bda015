"""
The routes and fields of the egress API this package uses, in one place. test/service/scrapy.test.ts
checks every entry against the service's /v1/openapi.json, so the client cannot drift from the server.
"""

#: name -> (method, path template)
ROUTES = {
    "lease": ("POST", "/v1/leases"),
    "release": ("POST", "/v1/leases/{id}/release"),
    "report_block": ("POST", "/v1/blocks"),
    "pools": ("GET", "/v1/pools"),
    "scale": ("PUT", "/v1/pools/{pool}/replicas"),
    "operation": ("GET", "/v1/operations/{id}"),
}

#: name -> the request body fields the client may send
REQUEST_FIELDS = {
    "lease": ["pool", "target", "session", "zone", "where", "ttlSeconds"],
    "release": ["outcome"],
    "report_block": ["pool", "target", "session", "proxy"],
    "scale": ["replicas"],
}

#: name -> (success status, the answer's fields the client reads; "[]" steps into an array's items)
RESPONSE_FIELDS = {
    "lease": (201, ["lease.id", "lease.proxy.id", "lease.proxy.url", "lease.rebound"]),
    "release": (200, ["released"]),
    "report_block": (200, ["blocked.proxy", "blocked.until"]),
    "pools": (200, ["pools[].name", "pools[].desired", "pools[].healthy", "pools[].scalable", "pools[].autoscale"]),
    "scale": (202, ["operation.id", "operation.status"]),
    "operation": (200, ["operation.id", "operation.status", "operation.error"]),
}

#: the outcomes a release takes
OUTCOMES = ["ok", "blocked", "error"]

#: operation statuses after which an operation changes no more
SETTLED = ["succeeded", "failed", "interrupted"]

#: error codes the client acts on: (name, status, code)
ERROR_CODES = [
    ("lease", 503, "none_available"),
    ("lease", 429, "target_busy"),
    ("release", 410, "lease_expired"),
    ("release", 404, "unknown_lease"),
    ("scale", 409, "autoscaled"),
]


def contract():
    """Everything above as one JSON-able object (what the drift check reads)."""
    return {
        "routes": ROUTES,
        "requestFields": REQUEST_FIELDS,
        "responseFields": RESPONSE_FIELDS,
        "outcomes": OUTCOMES,
        "settled": SETTLED,
        "errorCodes": ERROR_CODES,
    }


def path_of(name, **params):
    """The path of route `name` with its {params} filled in (percent-escaped)."""
    from urllib.parse import quote

    method, template = ROUTES[name]
    return method, template.format(**{k: quote(str(v), safe="") for k, v in params.items()})
