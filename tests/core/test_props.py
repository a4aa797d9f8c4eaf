"""nbgraph.core.props: equality, hashing and printing from ``__props__``."""

from nbgraph.core.props import PropsMixin


class Reduce(PropsMixin):
    __props__ = ("axis", "keepdims")

    def __init__(self, axis, keepdims=False):
        self.axis = axis
        self.keepdims = keepdims


class SubReduce(Reduce):
    pass


class Unit(PropsMixin):
    __props__ = ()


class Identity(PropsMixin):
    pass


def test_equal_props_are_equal_and_hash_alike():
    a, b = Reduce((0, 1), True), Reduce((0, 1), True)
    assert a == b and not a != b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


def test_any_differing_prop_makes_them_unequal():
    assert Reduce(0) != Reduce(1)
    assert Reduce(0, True) != Reduce(0, False)


def test_subclass_with_same_props_is_not_equal():
    assert Reduce(0) != SubReduce(0)
    assert SubReduce(0) != Reduce(0)


def test_str_shows_values_in_order():
    assert str(Reduce((0, 1), True)) == "Reduce{(0, 1), True}"
    assert str(Reduce(None)) == "Reduce{None, False}"


def test_empty_props_all_equal():
    assert Unit() == Unit() and hash(Unit()) == hash(Unit())
    assert str(Unit()) == "Unit"


def test_none_props_identity():
    a, b = Identity(), Identity()
    assert a == a and a != b
    assert len({a, b}) == 2
    assert str(a) == "Identity"
    assert a._props_dict() == {}


def test_props_dict():
    assert Reduce(2, True)._props_dict() == {"axis": 2, "keepdims": True}
    assert Unit()._props_dict() == {}


def test_comparison_with_foreign_objects():
    assert Reduce(0) != "Reduce{0, False}"
    assert Reduce(0) != None  # noqa: E711 - exercising __ne__
