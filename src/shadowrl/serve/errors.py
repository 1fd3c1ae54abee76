"""The one error a client's mistake becomes: a 4xx with OpenAI's `{"error": {...}}` body."""

from __future__ import annotations

from starlette.responses import JSONResponse  # fastapi's own, without importing fastapi


class APIError(Exception):
    """An error the client caused, rendered as OpenAI's `{"error": {...}}` body."""

    def __init__(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def response(self) -> JSONResponse:
        kind = {401: "authentication_error", 404: "not_found_error"}.get(
            self.status, "invalid_request_error"
        )
        body = {"message": self.message, "type": kind, "param": self.param, "code": self.code}
        return JSONResponse({"error": body}, status_code=self.status)
