"""Limit tests run on every journal backend the kernel suite runs on."""

from tests.kernel.conftest import any_journal

__all__ = ["any_journal"]
