"""The web console of `toolidx serve --http` (and `toolidx ui`): server-rendered pages over the same
library functions as the CLI and the meta-tools: search, a tool, servers, changes between crawls,
quarantine (approve / revoke), usage. Jinja2 is a dependency of toolidx, imported on the first page
only (serve's start never waits for it); an install that lost it answers `/` with a one-line hint.

`PATHS` is all serve/http.py needs to know: these paths are the console's, which checks its own
sessions (a cookie from a token login, or loopback without tokens) instead of a bearer header.
"""

PATHS = frozenset(
    {
        "/",
        "/login",
        "/logout",
        "/tool",
        "/servers",
        "/changes",
        "/quarantine",
        "/quarantine/approve",
        "/quarantine/revoke",
        "/usage",
        "/static/console.css",
        "/static/console.js",
    }
)
