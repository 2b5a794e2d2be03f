"""Fork tests run on every backend: memory, the real DuckDB owner process, PostgreSQL."""

from tests.kernel.conftest import any_journal  # noqa: F401
