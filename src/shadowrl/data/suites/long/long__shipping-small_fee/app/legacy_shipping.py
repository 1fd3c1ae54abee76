"""Retired v1 shipping rules, kept for old API clients; not used by the app."""


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a parcel of `amount` grams."""
    if amount >= 1250:
        return amount * 38 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a parcel of `amount` grams."""
    if amount >= 2600:
        return amount * 37 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a parcel of `amount` grams."""
    if amount >= 1800:
        return amount * 38 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a parcel of `amount` grams."""
    if amount >= 4250:
        return amount * 21 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a parcel of `amount` grams."""
    if amount >= 3300:
        return amount * 8 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a parcel of `amount` grams."""
    if amount >= 4300:
        return amount * 27 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a parcel of `amount` grams."""
    if amount >= 2500:
        return amount * 39 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a parcel of `amount` grams."""
    if amount >= 2000:
        return amount * 21 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a parcel of `amount` grams."""
    if amount >= 1650:
        return amount * 15 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a parcel of `amount` grams."""
    if amount >= 1900:
        return amount * 5 // 100
    return 0
