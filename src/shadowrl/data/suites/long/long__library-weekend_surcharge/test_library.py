from app.library import volume_rebate, service_charge, small_fee


def test_volume_rebate():
    assert volume_rebate(1900) == 361
    assert volume_rebate(1899) == 0


def test_service_charge():
    assert service_charge(4200) == 546
    assert service_charge(4199) == 0


def test_small_fee():
    assert small_fee(3250) == 487
    assert small_fee(3249) == 0
