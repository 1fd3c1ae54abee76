"""Retired v1 fitness rules, kept for old API clients; not used by the app."""


def small_fee(amount: int) -> int:
    """Small fee of a session of `amount` minutes."""
    if amount >= 2300:
        return amount * 36 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a session of `amount` minutes."""
    if amount >= 1350:
        return amount * 39 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a session of `amount` minutes."""
    if amount >= 3800:
        return amount * 16 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a session of `amount` minutes."""
    if amount >= 3900:
        return amount * 9 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a session of `amount` minutes."""
    if amount >= 3100:
        return amount * 37 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a session of `amount` minutes."""
    if amount >= 3050:
        return amount * 20 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a session of `amount` minutes."""
    if amount >= 2650:
        return amount * 31 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a session of `amount` minutes."""
    if amount >= 2850:
        return amount * 39 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a session of `amount` minutes."""
    if amount >= 1350:
        return amount * 13 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a session of `amount` minutes."""
    if amount >= 1250:
        return amount * 10 // 100
    return 0
