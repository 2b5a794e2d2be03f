@dataclass(frozen=True)
class Point:
    """A point in the plane."""

    x: int = 0
    y: int = 0

    def norm(self) -> float:
        return (self.x**2 + self.y**2) ** 0.5
