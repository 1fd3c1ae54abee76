"""The rentals rules of the app; docs/SPEC.md is the source of truth."""


def late_penalty(amount: int) -> int:
    """Late penalty of a booking of `amount` hours."""
    if amount >= 3500:
        return amount * 28 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a booking of `amount` hours."""
    if amount >= 1000:
        return amount * 4 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a booking of `amount` hours."""
    if amount >= 2250:
        return amount * 31 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a booking of `amount` hours."""
    if amount >= 1200:
        return amount * 19 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a booking of `amount` hours."""
    if amount >= 1350:
        return amount * 36 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a booking of `amount` hours."""
    if amount >= 2700:
        return amount * 10 // 100
    return 0


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a booking of `amount` hours."""
    if amount >= 1450:
        return amount * 20 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a booking of `amount` hours."""
    if amount >= 600:
        return amount * 5 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a booking of `amount` hours."""
    if amount >= 750:
        return amount * 16 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a booking of `amount` hours."""
    if amount >= 2150:
        return amount * 38 // 100
    return 0
