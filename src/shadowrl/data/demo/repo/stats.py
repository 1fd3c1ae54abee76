"""Small descriptive statistics helpers."""


def mean(values: list[float]) -> float:
    """Arithmetic mean of a non-empty list."""
    return sum(values) / len(values)


def median(values: list[float]) -> float:
    """Middle value of a non-empty list (mean of the two middle values if even)."""
    n = len(values)
    mid = n // 2
    if n % 2 == 1:
        return values[mid]
    return (values[mid - 1] + values[mid]) / 2
