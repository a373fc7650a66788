"""The console's routes (Starlette), mounted by serve/http.py behind its Host/Origin guard.

Who may look: without tokens (loopback only, as serve allows) everyone who reaches the address;
with tokens, a session opened by the login form from a token (or by `toolidx ui`'s one-time link),
seeing what that token's scope sees. Approve and revoke need a token marked `admin` (access.py)
and change only tools in its scope. Every POST carries the CSRF token bound to its session. Every
answer carries a strict CSP (no inline script, no plugins, no framing) and every text from a
server is escaped by the templates (Jinja2 autoescape; links are only ever built here).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio

from ... import __version__
from ...core.clock import now_iso
from ...core.errors import DatabaseError, ToolidxError
from ...core.safetext import visible
from ...core.vocabulary import SEARCH_MODES
from ...store.approvals import ChangedSinceShown
from ..access import ANONYMOUS, Grant, Tokens
from ..discovery import Discovery, LookupProblem
from . import pages
from .sessions import COOKIE, LOGIN_COOKIE, MAX_AGE_S, LoginThrottle, Session, Sessions

log = logging.getLogger("toolidx")

HERE = Path(__file__).parent
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    # never to another site (a no-referrer policy would make Chromium send `Origin: null` on the
    # forms, which HostGuard refuses)
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
# Jinja2 is a dependency: only a broken install lacks it, and toolidx is on no package index
SIGNED_IN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">
<title>toolidx</title></head><body><p>Signed in: <a href="/" id="continue">open the console</a>.</p></body></html>
"""
NO_JINJA = (
    "the web console needs Jinja2, a dependency of toolidx missing from this install: "
    "reinstall toolidx (pipx reinstall toolidx, or pip install --force-reinstall /path/to/toolidx)\n"
)
NOTICES_KEPT = 1000
FORM_DEFAULTS = {"mode": "hybrid", "k": "10"}  # what the search form sends when nothing was chosen (search.html)
STATIC = {"/static/console.css": "text/css", "/static/console.js": "text/javascript"}
NAV = (
    ("/", "Search"),
    ("/servers", "Servers"),
    ("/changes", "Changes"),
    ("/quarantine", "Quarantine"),
    ("/usage", "Usage"),
)


def local_access(user: str) -> tuple[Tokens, Sessions, str]:
    """`toolidx ui`'s access: one admin token nobody is shown (so nothing else on this machine can
    use the server without it), and a one-time link that opens a session as `user`. Returns
    (tokens, sessions, the link's secret)."""
    import secrets

    once = secrets.token_urlsafe(32)
    grant = Grant(f"ui:{user}", admin=True)
    return Tokens([(secrets.token_urlsafe(32), grant)]), Sessions(once, grant), once


# `toolidx ui`'s page of its own: the browser is started on this file, never on the link, since a
# command line is readable by every user of the machine (/proc/PID/cmdline); the file is not
OPENER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url={link}"><title>toolidx</title></head>
<body><p><a href="{link}">Open the toolidx console</a> (this page works once).</p></body></html>
"""


def open_privately(link: str) -> Callable[[], None]:
    """Open `link` in the default browser without putting it on the browser's command line: a page
    that forwards to it, written 0600 in a fresh 0700 folder (tempfile.mkdtemp), is what the
    browser is started on. In a thread: a BROWSER command may not return until the browser quits.
    Returns what removes the folder (at exit: the link is spent on first use anyway)."""
    import html
    import os
    import shutil
    import tempfile
    import threading
    import webbrowser

    folder = Path(tempfile.mkdtemp(prefix="toolidx-ui-"))
    page = folder / "open.html"
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(OPENER.format(link=html.escape(link, quote=True)))
    threading.Thread(target=webbrowser.open, args=(page.as_uri(),), name="toolidx-ui-browser", daemon=True).start()
    return lambda: shutil.rmtree(folder, ignore_errors=True)


def _address(items: list[tuple[str, str]]) -> str | None:
    """The search page's address without what the form sends unchosen (an empty field, a filter
    left at "any", the default mode and count), so an address says only what was asked
    (`/?q=x&server=time`, not `/?q=x&server=&tag=&...&mode=hybrid&k=10`); None when it is that already."""
    kept = [(k, v) for k, v in items if v != "" and FORM_DEFAULTS.get(k) != v]
    if len(kept) == len(items):
        return None
    return "/?" + urlencode(kept) if kept else "/"


def breakable(value: Any) -> Any:
    """A name as escaped HTML that may wrap after its `_`, `-` or `/` and nowhere else: a narrow
    table column breaks `source_timezone` as `source_/timezone`, never `source_ti/mezone`."""
    import re

    from markupsafe import Markup, escape

    # escaping writes no _, - or /: every one matched is the name's own
    return Markup(re.sub(r"([_/-])", r"\1<wbr>", str(escape(visible("" if value is None else str(value))))))


def _named(cookie: str, request: Any) -> str:
    """The cookie's name for this server: browsers share a host's cookies across its ports, so
    `toolidx ui` and a `serve --http` on one machine would otherwise sign each other out."""
    return f"{cookie}_{request.url.port or ''}"


class Visitor:
    """Who is asking: their grant, and their session (None without tokens)."""

    def __init__(self, grant: Grant, session: Session | None):
        self.grant, self.session = grant, session

    @property
    def admin(self) -> bool:
        return self.grant.admin


class Console:
    def __init__(self, server: Any, tokens: Tokens, *, https: bool = False, sessions: Sessions | None = None):
        self.server, self.tokens, self.https = server, tokens, https
        self.sessions = sessions or Sessions()
        self.throttle = LoginThrottle()
        self._env: Any = None
        # what an approve or revoke did, shown once on the page its redirect opens: session id -> text
        self.notices: dict[str, str] = {}

    # --- rendering ------------------------------------------------------------------------------
    def env(self) -> Any:
        if self._env is None:
            import jinja2  # imported on the first page, never at start

            env = jinja2.Environment(
                loader=jinja2.FileSystemLoader(str(HERE / "templates")),
                autoescape=True,  # every template, whatever its name: server text is never markup
            )
            env.filters["shown"] = lambda v: visible("" if v is None else str(v))
            env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.0f}%"
            env.filters["ms"] = lambda v: "–" if v is None else f"{v:.0f} ms"
            env.filters["score"] = lambda v: f"{v:.2f}"
            env.filters["breakable"] = breakable
            env.globals["search_modes"] = SEARCH_MODES  # the search form's, as every front-end has them
            # JSON as text, escaped by autoescape like any other (tojson's \u003c is for <script>)
            env.filters["json"] = lambda v, indent=None: visible(
                json.dumps(v, ensure_ascii=False, indent=indent, default=str)
            )
            self._env = env
        return self._env

    def render(self, request: Any, template: str, visitor: Visitor | None, status: int = 200, **ctx: Any) -> Any:
        from starlette.responses import HTMLResponse, PlainTextResponse

        try:
            tpl = self.env().get_template(template)
        except ImportError:
            return PlainTextResponse(NO_JINJA, status_code=501, headers=SECURITY_HEADERS)
        session = visitor.session if visitor else None
        html = tpl.render(
            nav=NAV,
            path=request.url.path,
            version=__version__,
            visitor=visitor,
            who=(visitor.grant.label if visitor and self.tokens else None),
            csrf=self.sessions.csrf(session.sid) if session else "",
            **ctx,
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    # --- who is asking ----------------------------------------------------------------------------
    def visitor(self, request: Any) -> Visitor | None:
        if not len(self.tokens):
            return Visitor(ANONYMOUS, None)
        s = self.sessions.get(request.cookies.get(_named(COOKIE, request)))
        return Visitor(s.grant, s) if s else None

    def view(self, visitor: Visitor) -> Discovery:
        disc: Discovery = self.server.discovery
        return self.server.views.get(visitor.grant.label, disc)

    def _cookie(self, response: Any, name: str, value: str, max_age: int | None) -> None:
        response.set_cookie(name, value, max_age=max_age, path="/", secure=self.https, httponly=True, samesite="strict")

    # --- the routes -------------------------------------------------------------------------------
    def routes(self) -> list[Any]:
        from starlette.routing import Route

        return [
            Route("/", self.search_page, methods=["GET"]),
            Route("/tool", self.tool_page, methods=["GET"]),
            Route("/servers", self.servers_page, methods=["GET"]),
            Route("/changes", self.changes_page, methods=["GET"]),
            Route("/quarantine", self.quarantine_page, methods=["GET"]),
            Route("/usage", self.simple("usage.html", pages.usage), methods=["GET"]),
            Route("/quarantine/approve", self.approve, methods=["POST"]),
            Route("/quarantine/revoke", self.revoke, methods=["POST"]),
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            *(Route(p, self.static, methods=["GET"]) for p in STATIC),
        ]

    async def static(self, request: Any) -> Any:
        from starlette.responses import Response

        path = request.url.path
        body = (HERE / "static" / path.rsplit("/", 1)[1]).read_bytes()
        return Response(body, media_type=STATIC[path], headers={**SECURITY_HEADERS, "cache-control": "max-age=300"})

    async def _read(self, request: Any, template: str, read: Any, *args: Any, status: int = 200, **extra: Any) -> Any:
        """Render `template` with `read(view, *args)` for a signed-in visitor (else to the login)."""
        visitor = self.visitor(request)
        if visitor is None:
            return self._to_login(request)
        d = self.view(visitor)
        try:
            await anyio.to_thread.run_sync(d.refresh)
            data = await anyio.to_thread.run_sync(read, d, *args)
        except LookupProblem as e:
            return self.render(request, "error.html", visitor, 404, message=e.message, suggestions=e.suggestions)
        except DatabaseError as e:
            return self.render(request, "error.html", visitor, 503, message=str(e), suggestions=[])
        except ToolidxError as e:
            return self.render(request, "error.html", visitor, 400, message=str(e), suggestions=[])
        # rendered in a worker thread too: a big page never holds up the event loop's other requests
        return await anyio.to_thread.run_sync(lambda: self.render(request, template, visitor, status, **data, **extra))

    def simple(self, template: str, read: Any) -> Any:
        async def page(request: Any) -> Any:
            return await self._read(request, template, read)

        return page

    async def search_page(self, request: Any) -> Any:
        from starlette.datastructures import QueryParams
        from starlette.responses import RedirectResponse

        # a filter left at "any" sends an empty value: no filter, as /v1/search without it
        params = QueryParams([(k, v) for k, v in request.query_params.multi_items() if v != ""])
        q = (params.get("q") or "").strip()
        clean = _address(request.query_params.multi_items())
        if clean is not None and params.get("partial") != "1":
            return RedirectResponse(clean, status_code=303, headers=SECURITY_HEADERS)

        def read(d: Discovery) -> dict[str, Any]:
            out: dict[str, Any] = {"facets": pages.facets(d), "q": q, "params": params, "result": None, "problem": None}
            if q:
                try:
                    out["result"] = pages.search(d, params)
                except ToolidxError as e:
                    if isinstance(e, DatabaseError):
                        raise
                    out["problem"] = str(e)
            return out

        partial = params.get("partial") == "1"  # search as you type: the results only
        return await self._read(request, "results.html" if partial else "search.html", read)

    async def tool_page(self, request: Any) -> Any:
        q = request.query_params
        return await self._read(request, "tool.html", pages.tool, q.get("id") or "", q.get("params"))

    async def servers_page(self, request: Any) -> Any:
        return await self._read(request, "servers.html", pages.servers, request.query_params.get("page"))

    async def quarantine_page(self, request: Any) -> Any:
        visitor = self.visitor(request)
        notice = self.notices.pop(visitor.session.sid, None) if visitor and visitor.session else None
        server = request.query_params.get("server")
        return await self._read(request, "quarantine.html", pages.quarantine, server, notice=notice)

    async def changes_page(self, request: Any) -> Any:
        p = request.query_params
        return await self._read(request, "changes.html", pages.changes, p.get("from"), p.get("to"))

    # --- approve / revoke ---------------------------------------------------------------------------
    async def approve(self, request: Any) -> Any:
        return await self._decide(request, revoke=False)

    async def revoke(self, request: Any) -> Any:
        return await self._decide(request, revoke=True)

    async def _decide(self, request: Any, revoke: bool) -> Any:
        from starlette.responses import RedirectResponse

        visitor = self.visitor(request)
        form = await request.form()
        session = visitor.session if visitor else None
        if visitor is None or session is None or not self.sessions.csrf_ok(session.sid, form.get("csrf")):
            return self._forbidden(
                request, visitor, "this form has expired or did not come from this console: reload it"
            )
        if not visitor.admin:
            log.info(f"console: {visitor.grant.label} may not {'revoke' if revoke else 'approve'} (not admin)")
            return self._forbidden(
                request, visitor, "approving and revoking need a token marked admin in the token file"
            )
        tool_id = str(form.get("id") or "")
        shown, shown_text = (v if isinstance(v, str) else None for v in (form.get("hash"), form.get("text")))
        d = self.view(visitor)
        by = f"console:{visitor.grant.label}"
        try:
            done = await anyio.to_thread.run_sync(pages.approve, d, tool_id, by, revoke, shown, shown_text)
            await anyio.to_thread.run_sync(d.refresh)
        except ChangedSinceShown as e:  # a crawl landed after the page was loaded: show what it changed
            log.info(f"console: {visitor.grant.label} approving {tool_id}: refused, changed since shown")
            await anyio.to_thread.run_sync(d.refresh)
            data = await anyio.to_thread.run_sync(pages.changed_since_shown, d, tool_id, shown or "")
            problem = str(e)
            return await anyio.to_thread.run_sync(
                lambda: self.render(request, "quarantine.html", visitor, 409, problem=problem, **data)
            )
        except ToolidxError as e:
            return self.render(request, "error.html", visitor, 400, message=str(e), suggestions=[])
        log.info(f"console: {visitor.grant.label} {done['action']}d {tool_id} at {done['at']}")
        self._notify(session.sid, done, tool_id)
        back = "/quarantine?" + urlencode({"server": tool_id.partition("/")[0]})
        return RedirectResponse(back, status_code=303, headers=SECURITY_HEADERS)

    def _notify(self, sid: str, done: dict[str, Any], tool_id: str) -> None:
        """Keep what was done for the page the redirect opens (the POST's own answer is a redirect,
        and a notice in the address could be forged by a link): "approved 1 tool of hostile"."""
        server, _, name = tool_id.partition("/")
        n = int(done.get("count") or 0)
        tools = f"{n} tool{'s' if n != 1 else ''} of {server}"
        if done.get("action") == "revoke":
            text = f"revoked the approval of {tools}: {name}" if n else f"{tool_id} had no approval to revoke"
        else:
            text = f"approved {tools}: {name}, by {done.get('by')} at {done.get('at')}"
        while len(self.notices) >= NOTICES_KEPT:  # sessions that never came back for theirs
            self.notices.pop(next(iter(self.notices)))
        self.notices[sid] = text

    def _forbidden(self, request: Any, visitor: Visitor | None, message: str) -> Any:
        return self.render(request, "error.html", visitor, 403, message=message, suggestions=[])

    # --- login / logout -------------------------------------------------------------------------
    def _to_login(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        return RedirectResponse("/login", status_code=303, headers=SECURITY_HEADERS)

    async def login_page(self, request: Any, problem: str | None = None, status: int = 200) -> Any:
        import secrets

        from starlette.responses import HTMLResponse, RedirectResponse

        once = request.query_params.get("once")
        if once:  # `toolidx ui`'s link: a session at once, and the link is spent
            grant = self.sessions.redeem(once)
            if grant is not None:
                # a page that goes on by itself, not a redirect: the link came from a page of
                # another site (OPENER, a file:), and a browser sends no SameSite=Strict cookie on
                # a redirect that such a page started; a navigation this page starts is same-site
                response = HTMLResponse(SIGNED_IN, headers=SECURITY_HEADERS)
                self._cookie(response, _named(COOKIE, request), self.sessions.open(grant).sid, MAX_AGE_S)
                log.info(f"console: {grant.label} signed in by the one-time link at {now_iso()}")
                return response
            problem, status = "this link was already used; run toolidx ui again for a new one", 403
        if not len(self.tokens):
            return RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
        pre = secrets.token_urlsafe(24)
        response = self.render(
            request,
            "login.html",
            None,
            status,
            login_csrf=self.sessions.csrf("login:" + pre),
            problem=problem,
            link_only=self.sessions.link_only,
        )
        self._cookie(response, _named(LOGIN_COOKIE, request), pre, 900)
        return response

    async def login(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        from ..refusals import REFUSALS

        form = await request.form()
        pre = request.cookies.get(_named(LOGIN_COOKIE, request))
        if not pre or not self.sessions.csrf_ok("login:" + pre, form.get("csrf")):
            return await self.login_page(request, "this form has expired: sign in again", 403)
        address = request.client.host if request.client else "?"
        wait = self.throttle.wait_s(address)
        if wait > 0:  # refused before the token is compared: guessing costs time, not only a line
            REFUSALS("console-login", f"console: 429 for a sign-in from {address}: too many wrong tokens")
            response = await self.login_page(
                request, f"too many wrong tokens from this address: try again in {wait:.0f} s", 429
            )
            response.headers["retry-after"] = str(int(wait) + 1)
            return response
        grant = self.tokens.match(str(form.get("token") or "").strip()) if len(self.tokens) else None
        if grant is None:
            n = self.throttle.failed(address)
            REFUSALS("console-login", f"console: a wrong token from {address} ({n} in the last 10 minutes)")
            return await self.login_page(request, "this token is not accepted here", 401)
        response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
        self._cookie(response, _named(COOKIE, request), self.sessions.open(grant).sid, MAX_AGE_S)
        response.delete_cookie(_named(LOGIN_COOKIE, request), path="/")
        log.info(f"console: {grant.label} signed in at {now_iso()}")
        return response

    async def logout(self, request: Any) -> Any:
        from starlette.responses import RedirectResponse

        visitor = self.visitor(request)
        form = await request.form()
        if visitor is not None and visitor.session is not None:
            if not self.sessions.csrf_ok(visitor.session.sid, form.get("csrf")):
                return self._forbidden(request, visitor, "this form has expired: reload the page")
            self.sessions.close(visitor.session.sid)
        response = RedirectResponse("/login", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(_named(COOKIE, request), path="/")
        return response
