from tests.kernel.conftest import any_journal

__all__ = ["any_journal"]
