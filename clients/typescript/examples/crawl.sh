#!/bin/sh
# The same crawler loop with curl and jq: lease (waiting on 503 as Retry-After says), fetch through the
# proxy, release with the outcome. Usage: EGRESS_URL=… EGRESS_TOKEN=… [EGRESS_POOL=web] crawl.sh URL…
set -eu
: "${EGRESS_URL:?set EGRESS_URL}" "${EGRESS_TOKEN:?set EGRESS_TOKEN (lease scope)}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
api() { # METHOD PATH BODY -> body in $tmp/body, headers in $tmp/headers, prints the status
    curl -sS -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$1" \
        -H "Authorization: Bearer $EGRESS_TOKEN" -H 'Content-Type: application/json' -d "$3" "$EGRESS_URL$2"
}
for url in "$@"; do
    host=$(printf '%s\n' "$url" | sed -E 's#^[a-z]+://([^/:]+).*#\1#')
    request=$(jq -nc --arg pool "${EGRESS_POOL:-}" --arg target "$host" '{target: $target} + (if $pool == "" then {} else {pool: $pool} end)')
    tries=0
    while status=$(api POST /v1/leases "$request") && [ "$status" = 503 ] && [ "$tries" -lt 10 ]; do
        wait=$(grep -i '^retry-after:' "$tmp/headers" | tr -d '\r' | cut -d' ' -f2)
        tries=$((tries + 1))
        sleep "${wait:-1}"
    done
    if [ "$status" != 201 ]; then
        echo "lease failed ($status): $(jq -r .error.message "$tmp/body")" >&2
        exit 1
    fi
    lease=$(jq -r .lease.id "$tmp/body")
    proxy=$(jq -r .lease.proxy.url "$tmp/body")
    if code=$(curl -sS -o "$tmp/page" -w '%{http_code}' --max-time 15 -x "$proxy" "$url"); then
        case "$code" in 403 | 429) outcome=blocked ;; *) outcome=ok ;; esac
    else
        code=error outcome=error
    fi
    api POST "/v1/leases/$lease/release" "{\"outcome\":\"$outcome\"}" >/dev/null
    # The URL carries the credentials of a pool with `auth` (curl -x sends them): print it without.
    echo "$code $url via $(printf '%s' "$proxy" | sed -E 's#//[^@/]*@#//#') ($outcome)"
done
