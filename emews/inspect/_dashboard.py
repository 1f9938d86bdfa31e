"""``emews dashboard``: optuna-dashboard served on a study while it runs, read-only.

::

    browser --HTTP--> TokenGate (WSGI: the token; GET and HEAD alone)
                        --> optuna-dashboard's app (its trials cached a few seconds)
                            --> StoreView (_optuna_view.py: Optuna's BaseStorage, read-only)
                                --> the study's store, opened read-only for each read

Why a token on 127.0.0.1, and why curves are thinned: docs/src/dashboard.md.
"""

import hmac
import http.cookies
import importlib.util
import json
import os
import secrets
import signal
import socketserver
import sys
import urllib.parse
import wsgiref.simple_server

from .._errors import ConfigError, missing_extra

COOKIE = "emews_dashboard_token"
TOKEN_ENV = "EMEWS_DASHBOARD_TOKEN"   # a token of your own (default: a new random one)
READ_METHODS = ("GET", "HEAD")
CURVE_POINTS = 20   # each learning curve as served: thinned to this many points


def serve(paths, host="127.0.0.1", port=8080, out=sys.stdout):
    """Serve optuna-dashboard on the studies of ``paths`` (each an ``EXPDIR`` or a
    ``DATA_DIR/NAME``) at ``host:port`` (``port`` 0: a free one) until Ctrl-C or SIGTERM;
    return 0. Call it from the main thread (it sets those signals' handlers)."""
    from ._optuna_view import StoreView
    from ._source import read

    view = StoreView(paths, curve_points=CURVE_POINTS)
    studies = view.get_all_studies()
    for study in studies:   # every store opened once now: a bad one is a one-line error here
        read(study.user_attrs["emews_expdir"], lambda store: store.best())
    if importlib.util.find_spec("optuna_dashboard") is None:
        raise missing_extra("emews dashboard", "optuna-dashboard", "dashboard")
    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    try:   # its app is set once optuna-dashboard is imported
        server = wsgiref.simple_server.make_server(host, port, None, _ThreadingServer,
                                                   _QuietHandler)
    except OSError as exc:
        if exc.errno == 98:   # EADDRINUSE
            raise ConfigError("emews dashboard --port", f"must be a free port on {host}; "
                              "it is in use (choose another with --port)", port) from None
        raise ConfigError("emews dashboard --host", "must be an address of this machine to "
                          f"listen on ({exc.strerror or exc})", host) from None
    url = f"http://{host}:{server.server_port}/dashboard?token={token}"
    for stop in (signal.SIGINT, signal.SIGTERM):   # even where a shell started it ignoring them
        signal.signal(stop, _interrupt)
    print(f"emews: dashboard of {len(studies)} stud{'y' if len(studies) == 1 else 'ies'} "
          f"(read-only) at {url}\nemews: Ctrl-C stops it", file=out, flush=True)   # at once
    try:
        from optuna_dashboard import wsgi   # seconds: after the URL, which works meanwhile

        server.set_app(TokenGate(wsgi(view), token))
        server.serve_forever()
    except KeyboardInterrupt:
        print("emews: dashboard stopped", file=out, flush=True)
    finally:
        server.server_close()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


class _ThreadingServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        """No line per request."""


class TokenGate:
    """WSGI middleware: a request passes with ``token`` (the URL's ``?token=``, which sets a
    cookie and redirects to the URL without it; the cookie; or ``Authorization: Bearer``) and
    a reading method alone; anything else is answered here, and ``app`` never sees it."""

    def __init__(self, app, token):
        self.app, self.token = app, token

    def __call__(self, environ, start_response):
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        if self._matches(query.get("token", [None])[0]):
            rest = urllib.parse.urlencode({k: v for k, v in query.items() if k != "token"},
                                          doseq=True)
            cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            location = environ.get("PATH_INFO", "/") + (f"?{rest}" if rest else "")
            start_response("303 See Other", [("Location", location), ("Set-Cookie", cookie),
                                              ("Content-Length", "0")])
            return [b""]
        if not self._authorized(environ):
            return _refuse(start_response, "403 Forbidden", "a token is needed: open the URL "
                           "that emews dashboard printed (it ends with ?token=...)")
        if environ["REQUEST_METHOD"] not in READ_METHODS:
            return _refuse(start_response, "405 Method Not Allowed", "the emews dashboard is "
                           f"read-only: {environ['REQUEST_METHOD']} {environ.get('PATH_INFO')} "
                           "refused, nothing was written", [("Allow", ", ".join(READ_METHODS))])
        return self.app(environ, start_response)

    def _authorized(self, environ):
        cookies = http.cookies.SimpleCookie(environ.get("HTTP_COOKIE", ""))
        if COOKIE in cookies and self._matches(cookies[COOKIE].value):
            return True
        scheme, _, given = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        return scheme.lower() == "bearer" and self._matches(given.strip())

    def _matches(self, given):
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


def _refuse(start_response, status, reason, headers=()):
    body = json.dumps({"reason": reason}).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body))), *headers])
    return [body]
