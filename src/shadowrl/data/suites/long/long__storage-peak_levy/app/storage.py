"""The storage rules of the app; docs/SPEC.md is the source of truth."""


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a locker of `amount` days."""
    if amount >= 3150:
        return amount * 5 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a locker of `amount` days."""
    if amount >= 1300:
        return amount * 4 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a locker of `amount` days."""
    if amount >= 3000:
        return amount * 7 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a locker of `amount` days."""
    if amount >= 950:
        return amount * 11 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a locker of `amount` days."""
    if amount >= 3150:
        return amount * 22 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a locker of `amount` days."""
    if amount >= 4000:
        return amount * 29 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a locker of `amount` days."""
    if amount >= 1400:
        return amount * 30 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a locker of `amount` days."""
    if amount >= 2400:
        return amount * 25 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a locker of `amount` days."""
    if amount >= 1000:
        return amount * 18 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a locker of `amount` days."""
    if amount >= 3300:
        return amount * 26 // 100
    return 0
