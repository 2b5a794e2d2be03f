"""Jobs."""

from letitloop import durable


class Jobs:
    @staticmethod
    @durable
    def nightly(day):
        return day
