"""Retired v1 catering rules, kept for old API clients; not used by the app."""


def early_credit(amount: int) -> int:
    """Early credit of an event of `amount` guests."""
    if amount >= 3550:
        return amount * 16 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of an event of `amount` guests."""
    if amount >= 2350:
        return amount * 3 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of an event of `amount` guests."""
    if amount >= 3350:
        return amount * 32 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of an event of `amount` guests."""
    if amount >= 500:
        return amount * 16 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of an event of `amount` guests."""
    if amount >= 2400:
        return amount * 10 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of an event of `amount` guests."""
    if amount >= 2400:
        return amount * 37 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of an event of `amount` guests."""
    if amount >= 4700:
        return amount * 12 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of an event of `amount` guests."""
    if amount >= 3200:
        return amount * 33 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of an event of `amount` guests."""
    if amount >= 1050:
        return amount * 34 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of an event of `amount` guests."""
    if amount >= 1950:
        return amount * 37 // 100
    return 0
