"""The address a request comes from, as the login throttle (django-axes) keys it.

By default the connection's own address (``REMOTE_ADDR``): a header anyone can send is never
believed. Behind a reverse proxy every connection comes from the proxy, so the operator names the
header the proxy sets (``DIALAB_TRUSTED_PROXY_HEADER``, e.g. ``X-Forwarded-For``) and how many
proxies in front of Dialab append to it (``DIALAB_TRUSTED_PROXY_COUNT``, default 1). Each trusted
proxy appends the address it was connected from, so the client is that many entries from the
right; entries further left were written by the client itself and are ignored. A request whose
header is missing, too short or not an address is keyed by ``REMOTE_ADDR``.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """``AXES_CLIENT_IP_CALLABLE``: the client's address, read from the trusted proxy header
    only where the operator configured one."""
    remote = request.META.get("REMOTE_ADDR")
    header = getattr(settings, "DIALAB_TRUSTED_PROXY_HEADER", "")
    if not header:
        return remote
    count = int(getattr(settings, "DIALAB_TRUSTED_PROXY_COUNT", 1))
    value = request.META.get("HTTP_" + header.upper().replace("-", "_"), "")
    hops = [hop.strip() for hop in str(value).split(",")]
    if count < 1 or len(hops) < count:
        return remote
    candidate = hops[-count]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote
