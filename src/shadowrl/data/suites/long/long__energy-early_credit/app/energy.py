"""The energy rules of the app; docs/SPEC.md is the source of truth."""


def service_charge(amount: int) -> int:
    """Service charge of a meter of `amount` kwh."""
    if amount >= 4350:
        return amount * 12 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a meter of `amount` kwh."""
    if amount >= 2900:
        return amount * 21 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a meter of `amount` kwh."""
    if amount >= 3500:
        return amount * 7 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a meter of `amount` kwh."""
    if amount >= 1000:
        return amount * 36 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a meter of `amount` kwh."""
    if amount >= 750:
        return amount * 7 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a meter of `amount` kwh."""
    if amount >= 1900:
        return amount * 11 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a meter of `amount` kwh."""
    if amount >= 750:
        return amount * 22 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a meter of `amount` kwh."""
    if amount >= 550:
        return amount * 31 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a meter of `amount` kwh."""
    if amount >= 2600:
        return amount * 13 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a meter of `amount` kwh."""
    if amount >= 1450:
        return amount * 32 // 100
    return 0
