"""Importable value classes for the preview tests (the codec stores module-level classes)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Usage:
    input: int
    output: int


@dataclasses.dataclass
class Response:
    text: str
    usage: Usage


class Opaque:
    """No safe encoding: stored as authenticated pickle."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return f"Opaque(token={self.token!r})"
