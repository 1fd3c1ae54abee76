"""Retired v1 refunds rules, kept for old API clients; not used by the app."""


def early_credit(amount: int) -> int:
    """Early credit of a refund of `amount` cents."""
    if amount >= 2150:
        return amount * 25 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a refund of `amount` cents."""
    if amount >= 3500:
        return amount * 39 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a refund of `amount` cents."""
    if amount >= 1550:
        return amount * 16 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a refund of `amount` cents."""
    if amount >= 850:
        return amount * 13 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a refund of `amount` cents."""
    if amount >= 1750:
        return amount * 24 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a refund of `amount` cents."""
    if amount >= 3850:
        return amount * 19 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a refund of `amount` cents."""
    if amount >= 1250:
        return amount * 31 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a refund of `amount` cents."""
    if amount >= 1600:
        return amount * 3 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a refund of `amount` cents."""
    if amount >= 3500:
        return amount * 29 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a refund of `amount` cents."""
    if amount >= 4100:
        return amount * 35 // 100
    return 0
