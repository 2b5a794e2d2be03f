class Client:
    def get(self, url: str, timeout: float = 5.0) -> bytes:
        return self.http.get(url, timeout=timeout)
