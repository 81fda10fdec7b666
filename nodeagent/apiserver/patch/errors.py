"""The patch error type: the Status the API server answers a patch it refuses with.

Why its own module: JSON patch, merge patch and strategic merge patch all answer with the
Status the API server sends for a bad patch (k8s.io/apiserver endpoints/handlers/patch.go).
The Go values those texts embed (`map: map[image:x] does not contain declared merge key: name`)
are rendered by schema/gotext.py, as every other Go text of the API server is. Pure: no I/O.
"""

from __future__ import annotations

from nodeagent.apiserver.errors import APIError

REJECTED = "the server rejected our request due to an error in our request"
"""What upstream's NewGenericServerResponse(422) says: the API server answers a failed json-patch
operation (a `test` that does not hold, a path that is missing) with this fixed text and reason
Invalid, dropping the library's own message; we keep that message in `PatchError.detail`."""


class PatchError(APIError):
    """A patch the server refuses, carrying the Status upstream answers with.

    `code`/`reason`/`message` are the Status fields (reason "" is upstream's StatusReasonUnknown,
    used when a strategic-merge error is not one of the typed ones and reaches the client as a
    plain 500). `detail` is the patch library's own text (evanphx/json-patch, strategicpatch),
    identical to `message` except for the generic 422 answer.
    """

    def __init__(self, code: int, reason: str, message: str, *, detail: str = "") -> None:
        super().__init__(code, reason, message)
        self.detail = detail or message

    @classmethod
    def bad_request(cls, text: str) -> PatchError:
        return cls(400, "BadRequest", text)

    @classmethod
    def rejected(cls, text: str) -> PatchError:
        return cls(422, "Invalid", REJECTED, detail=text)

    @classmethod
    def internal(cls, text: str) -> PatchError:
        return cls(500, "", text)
