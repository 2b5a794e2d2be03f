def get(self, url: str, timeout: float = 5.0, retries: int = 0, *, verify: bool = True, **extra) -> bytes:
    return self.http.get(url, timeout=timeout, retries=retries, verify=verify, **extra)
