from app.payroll import small_fee, early_credit, volume_rebate


def test_small_fee():
    assert small_fee(1500) == 270
    assert small_fee(1499) == 0


def test_early_credit():
    assert early_credit(1900) == 589
    assert early_credit(1899) == 0


def test_volume_rebate():
    assert volume_rebate(2900) == 1131
    assert volume_rebate(2899) == 0
