"""`MCP: log in NAME` (command palette): the OAuth login of `kep mcp login`, from the TUI.

Offered for an HTTP server whose state says it needs a login. Choosing the entry is the user's
own key: the authorization URL is handed to the desktop's browser opener where there is one,
and also shown in a notice (literally, through the display edge) and copied to the clipboard
(OSC 52) for a browser elsewhere; the redirect comes back to kep's loopback receiver, and the
server is restarted with the new tokens. Tokens are never shown: the secrets filter knows them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuiapp.ui.literal import say

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp


def needs_login(reason: str) -> bool:
    return "kep mcp login" in reason


async def log_in(app: KepApp, name: str) -> None:
    from tuiapp.mcp import oauth
    from tuiapp.mcp.servers import McpJsonError, configured_servers
    from tuiapp.security import secrets

    try:
        cfg = configured_servers(app.ws.config).get(name)
    except McpJsonError as e:
        app.notify(say("{}", e), title="MCP login", severity="error")
        return
    if cfg is None or not cfg.url:
        app.notify(say("{} is not an HTTP MCP server", name), title="MCP login",
                   severity="error")
        return
    oauth.quiet_sdk_logging()

    def show(url: str) -> None:
        from tuiapp.ui.screens.elicitation import open_in_browser

        app.copy_to_clipboard(url)
        opened = open_in_browser(url) is None
        app.notify(say("{} to log in to {} (the URL is on the clipboard):\n{}",
                       "Your browser was asked to open this URL" if opened
                       else "Open this URL in a browser", name, url),
                   title="MCP login", timeout=300)

    try:
        await oauth.login(name, cfg.url, show)
    except Exception as e:  # the SDK's OAuth errors, HTTP errors: one notice
        leaf: BaseException = e
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        why = secrets.scrub_error(str(leaf) or type(leaf).__name__)
        app.notify(say("login to {} failed: {}", name, why), title="MCP login",
                   severity="error", timeout=15)
        return
    app.notify(say("logged in to {}", name), title="MCP login")
    app.restart_mcp_server(name)
