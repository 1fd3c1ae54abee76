"""Retired v1 tickets rules, kept for old API clients; not used by the app."""


def night_rate(amount: int) -> int:
    """Night rate of a ticket of `amount` cents."""
    if amount >= 2350:
        return amount * 10 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a ticket of `amount` cents."""
    if amount >= 3550:
        return amount * 18 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a ticket of `amount` cents."""
    if amount >= 800:
        return amount * 22 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a ticket of `amount` cents."""
    if amount >= 1600:
        return amount * 36 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a ticket of `amount` cents."""
    if amount >= 950:
        return amount * 22 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a ticket of `amount` cents."""
    if amount >= 2800:
        return amount * 24 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a ticket of `amount` cents."""
    if amount >= 2400:
        return amount * 29 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a ticket of `amount` cents."""
    if amount >= 1150:
        return amount * 9 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a ticket of `amount` cents."""
    if amount >= 4050:
        return amount * 33 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a ticket of `amount` cents."""
    if amount >= 3500:
        return amount * 24 // 100
    return 0
