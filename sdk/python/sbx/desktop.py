"""Desktops (docs/desktop.md): ``Sandbox.screenshot`` and ``Sandbox.input``,
over the MCP tools environment_screenshot and environment_input. The X
display runs inside the environment (Xvfb and a window manager, started on
first use); actions are dicts shaped like the tool's:
``{"type": "click", "x": 10, "y": 20}``, ``{"type": "type", "text": "hi"}``,
``{"type": "key", "keys": "ctrl+c"}``."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .errors import SbxError


@dataclass
class Screenshot:
    """A PNG of the display: ``png`` (bytes), ``width`` and ``height`` (pixels)."""

    png: bytes
    width: int
    height: int
    display: int = 0


class DesktopMixin:
    """The desktop methods of Sandbox (it provides ``id`` and ``_client``)."""

    def screenshot(self, display: Optional[int] = None) -> Screenshot:
        """The screen as a PNG (starts the display if none runs)."""
        args: Dict[str, Any] = {"environment_id": self.id}
        if display is not None:
            args["display"] = display
        sc, content = self._client.call_tool_content("environment_screenshot", args)
        data = sc.get("png")  # the JSON-RPC method's shape
        for c in content:
            if isinstance(c, dict) and c.get("type") == "image" and c.get("mimeType") == "image/png":
                data = c.get("data")
        if not data:
            raise SbxError("environment_screenshot returned no image")
        return Screenshot(base64.b64decode(data), int(sc.get("width") or 0), int(sc.get("height") or 0),
                          int(sc.get("display") or 0))

    def input(self, actions: List[Dict[str, Any]], display: Optional[int] = None) -> int:
        """Mouse and keyboard actions, in order (all checked before any runs).
        Returns how many were performed."""
        args: Dict[str, Any] = {"environment_id": self.id, "actions": list(actions)}
        if display is not None:
            args["display"] = display
        return int(self._client.call_tool("environment_input", args).get("performed") or 0)
