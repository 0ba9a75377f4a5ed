"""Optional bearer-token authentication: a read-only token and an admin token.

With no token configured (as in `tablequeue dev`) everything is open. With tokens, reads need
either token and changes need the admin token. Browsers may send the token as the
`tablequeue_token` cookie, which the admin UI's sign-in form sets.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import HTTPException, Request

COOKIE = "tablequeue_token"


@dataclass(frozen=True)
class Auth:
    admin_token: str | None = None
    read_token: str | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.admin_token or self.read_token)

    def _presented(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "bearer" and token:
            return token.strip()
        return request.cookies.get(COOKIE)

    def _matches(self, presented: str | None, *tokens: str | None) -> bool:
        return presented is not None and any(
            token and hmac.compare_digest(presented.encode(), token.encode()) for token in tokens
        )

    def _check(self, request: Request, *tokens: str | None) -> None:
        if not self.enabled:
            return
        presented = self._presented(request)
        if presented is None:
            raise HTTPException(401, "authentication required: send Authorization: Bearer TOKEN")
        if not self._matches(presented, *tokens):
            raise HTTPException(403, "this token may not do that")

    def accepts(self, token: str) -> bool:
        """Whether `token` is one of the configured tokens (for the admin UI's sign-in)."""
        return self._matches(token, self.admin_token, self.read_token)

    def is_admin(self, request: Request) -> bool:
        """Whether the request may change things (always, with no token configured)."""
        return not self.enabled or self._matches(self._presented(request), self.admin_token)

    def signed_in(self, request: Request) -> bool:
        """Whether tokens are configured and the request carries one of them."""
        return self.enabled and self._matches(
            self._presented(request), self.admin_token, self.read_token
        )

    def reader(self, request: Request) -> None:
        self._check(request, self.admin_token, self.read_token)

    def admin(self, request: Request) -> None:
        self._check(request, self.admin_token)
