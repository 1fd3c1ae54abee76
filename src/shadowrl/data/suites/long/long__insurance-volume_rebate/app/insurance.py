"""The insurance rules of the app; docs/SPEC.md is the source of truth."""


def small_fee(amount: int) -> int:
    """Small fee of a claim of `amount` cents."""
    if amount >= 550:
        return amount * 17 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a claim of `amount` cents."""
    if amount >= 2800:
        return amount * 7 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a claim of `amount` cents."""
    if amount >= 4300:
        return amount * 12 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a claim of `amount` cents."""
    if amount >= 1800:
        return amount * 3 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a claim of `amount` cents."""
    if amount >= 1800:
        return amount * 10 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a claim of `amount` cents."""
    if amount >= 500:
        return amount * 21 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a claim of `amount` cents."""
    if amount >= 2850:
        return amount * 4 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a claim of `amount` cents."""
    if amount >= 4350:
        return amount * 17 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a claim of `amount` cents."""
    if amount >= 1400:
        return amount * 14 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a claim of `amount` cents."""
    if amount >= 3400:
        return amount * 10 // 100
    return 0
