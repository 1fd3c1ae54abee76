"""Retired v1 library rules, kept for old API clients; not used by the app."""


def volume_rebate(amount: int) -> int:
    """Volume rebate of a loan of `amount` days."""
    if amount >= 1900:
        return amount * 19 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a loan of `amount` days."""
    if amount >= 4200:
        return amount * 13 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a loan of `amount` days."""
    if amount >= 3250:
        return amount * 15 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a loan of `amount` days."""
    if amount >= 2750:
        return amount * 10 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a loan of `amount` days."""
    if amount >= 900:
        return amount * 4 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a loan of `amount` days."""
    if amount >= 3850:
        return amount * 31 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a loan of `amount` days."""
    if amount >= 1750:
        return amount * 10 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a loan of `amount` days."""
    if amount >= 3650:
        return amount * 28 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a loan of `amount` days."""
    if amount >= 2100:
        return amount * 16 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a loan of `amount` days."""
    if amount >= 650:
        return amount * 16 // 100
    return 0
