from app.pricing import early_credit, service_charge, bulk_discount


def test_early_credit():
    assert early_credit(4200) == 672
    assert early_credit(4199) == 0


def test_service_charge():
    assert service_charge(3700) == 407
    assert service_charge(3699) == 0


def test_bulk_discount():
    assert bulk_discount(2300) == 253
    assert bulk_discount(2299) == 0
