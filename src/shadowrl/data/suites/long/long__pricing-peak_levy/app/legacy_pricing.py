"""Retired v1 pricing rules, kept for old API clients; not used by the app."""


def early_credit(amount: int) -> int:
    """Early credit of an order of `amount` cents."""
    if amount >= 4200:
        return amount * 16 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of an order of `amount` cents."""
    if amount >= 3700:
        return amount * 11 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of an order of `amount` cents."""
    if amount >= 2300:
        return amount * 11 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of an order of `amount` cents."""
    if amount >= 1100:
        return amount * 19 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of an order of `amount` cents."""
    if amount >= 3900:
        return amount * 12 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of an order of `amount` cents."""
    if amount >= 2450:
        return amount * 9 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of an order of `amount` cents."""
    if amount >= 950:
        return amount * 24 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of an order of `amount` cents."""
    if amount >= 3500:
        return amount * 38 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of an order of `amount` cents."""
    if amount >= 1100:
        return amount * 25 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of an order of `amount` cents."""
    if amount >= 2950:
        return amount * 23 // 100
    return 0
