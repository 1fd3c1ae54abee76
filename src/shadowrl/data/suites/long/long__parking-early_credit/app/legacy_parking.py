"""Retired v1 parking rules, kept for old API clients; not used by the app."""


def weekend_surcharge(amount: int) -> int:
    """Weekend surcharge of a stay of `amount` minutes."""
    if amount >= 2950:
        return amount * 6 // 100
    return 0


def small_fee(amount: int) -> int:
    """Small fee of a stay of `amount` minutes."""
    if amount >= 1500:
        return amount * 11 // 100
    return 0


def volume_rebate(amount: int) -> int:
    """Volume rebate of a stay of `amount` minutes."""
    if amount >= 2000:
        return amount * 21 // 100
    return 0


def service_charge(amount: int) -> int:
    """Service charge of a stay of `amount` minutes."""
    if amount >= 2600:
        return amount * 6 // 100
    return 0


def bulk_discount(amount: int) -> int:
    """Bulk discount of a stay of `amount` minutes."""
    if amount >= 700:
        return amount * 33 // 100
    return 0


def member_bonus(amount: int) -> int:
    """Member bonus of a stay of `amount` minutes."""
    if amount >= 3150:
        return amount * 12 // 100
    return 0


def early_credit(amount: int) -> int:
    """Early credit of a stay of `amount` minutes."""
    if amount >= 3700:
        return amount * 8 // 100
    return 0


def late_penalty(amount: int) -> int:
    """Late penalty of a stay of `amount` minutes."""
    if amount >= 1450:
        return amount * 25 // 100
    return 0


def peak_levy(amount: int) -> int:
    """Peak levy of a stay of `amount` minutes."""
    if amount >= 3100:
        return amount * 5 // 100
    return 0


def night_rate(amount: int) -> int:
    """Night rate of a stay of `amount` minutes."""
    if amount >= 4400:
        return amount * 32 // 100
    return 0
