"""Where a request comes from, and where it arrived: the two ends of its connection.

What answers HTTP without authenticating answers this machine only. A REST trigger or console
mounted in someone's service does not know the address the service listens on, so it asks each
request's socket: the client's address (`from_this_machine`) and the address the request
arrived on (`arrived_on_loopback`).

Behind a reverse proxy on the same machine every client looks local (its connection comes from
the proxy). A request carrying what proxies add (`Forwarded`, `X-Forwarded-For`, `X-Real-IP`,
`Via`) is therefore not taken as local, whatever its connection; a service behind a proxy that
adds none must authenticate, unless a middleware of the service sets `request.remote` to the
client behind the proxy (`request.clone(remote=...)`).

Examples:
    >>> is_loopback_address(("127.0.0.1", 52100)), is_loopback_address("::ffff:127.0.0.1")
    (True, True)
    >>> is_loopback_address(("192.0.2.7", 52100)), is_loopback_address("/run/service.sock")
    (False, False)
"""

from __future__ import annotations

import ipaddress

from aiohttp import web

__all__ = ["PROXY_HEADERS", "arrived_on_loopback", "from_this_machine", "is_loopback_address"]

#: Headers a proxy adds to what it forwards: a request with one came through a proxy.
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP", "Via")


def is_loopback_address(address: object) -> bool:
    """Whether a socket address (`(ip, port, ...)` or an IP as str) is a loopback address.

    An IPv4 address mapped into IPv6 (`::ffff:127.0.0.1`, what a dual-stack socket reports
    for an IPv4 client) counts as the IPv4 address. Anything else (a Unix socket's path, None)
    is not.
    """
    if isinstance(address, tuple | list) and address:
        address = address[0]
    if not isinstance(address, str):
        return False
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # without an IPv6 zone (`%eth0`)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def _transport_info(request: web.BaseRequest, name: str) -> object:
    transport = request.transport
    return None if transport is None else transport.get_extra_info(name)


def from_this_machine(request: web.BaseRequest) -> bool:
    """Whether the client of `request` is on this machine.

    Both its connection's peer address and `request.remote` (which a proxy-aware middleware
    may have set to the client behind a proxy) must be loopback addresses, and it must carry
    none of `PROXY_HEADERS` (see module); a connection that is gone, or a Unix socket's, is not
    known to be local.
    """
    if any(name in request.headers for name in PROXY_HEADERS):
        return False
    return is_loopback_address(_transport_info(request, "peername")) and is_loopback_address(
        request.remote
    )


def arrived_on_loopback(request: web.BaseRequest) -> bool:
    """Whether `request` arrived on a loopback address (its connection's local end).

    Such a request should name a loopback host: another name (`Host`) is a page whose name was
    rebound to this machine (DNS rebinding). A connection that is gone counts as loopback (the
    stricter answer).
    """
    local = _transport_info(request, "sockname")
    return local is None or is_loopback_address(local)
