from app.energy import service_charge, member_bonus, bulk_discount


def test_service_charge():
    assert service_charge(4350) == 522
    assert service_charge(4349) == 0


def test_member_bonus():
    assert member_bonus(2900) == 609
    assert member_bonus(2899) == 0


def test_bulk_discount():
    assert bulk_discount(3500) == 245
    assert bulk_discount(3499) == 0
