"""Jobs."""


class Jobs:
    @staticmethod
    def nightly(day):
        return day
