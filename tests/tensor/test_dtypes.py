"""The one dtype table (nbgraph.tensor.dtypes): its rows agree with NumPy, the groups
are derived from it, and the older import points read the same objects."""

import numpy as np
import pytest

from nbgraph.tensor import dtypes as D
from nbgraph.tensor import scalar_type, type as tensor_type


def test_every_row_agrees_with_numpy_on_kind_and_itemsize():
    for name, row in D.DTYPES.items():
        assert row.name == name
        assert (np.dtype(name).kind, np.dtype(name).itemsize) == (row.kind, row.itemsize)


def test_the_groups_partition_the_supported_dtypes():
    parts = [D.BOOL_DTYPES, D.INT_DTYPES, D.UINT_DTYPES, D.FLOAT_DTYPES, D.HALF_DTYPES,
             D.COMPLEX_DTYPES]
    joined = [name for part in parts for name in part]
    assert sorted(joined) == sorted(D.DTYPES) and len(set(joined)) == len(joined)
    assert D.ALL_DTYPES == D.REAL_DTYPES + D.EXTENDED_DTYPES
    assert set(D.ALL_DTYPES) == set(D.DTYPES)
    assert D.FLOAT_DTYPES == ("float32", "float64") and D.HALF_DTYPES == ("float16",)
    assert set(D.C_TYPES) == set(D.DTYPES)


def test_older_names_are_the_table_itself():
    assert scalar_type.all_dtypes is D.REAL_DTYPES
    assert scalar_type.extended_dtypes is D.EXTENDED_DTYPES
    assert tensor_type.ALL_DTYPES is D.ALL_DTYPES
    assert tensor_type.CONTINUOUS_DTYPES is D.CONTINUOUS_DTYPES


@pytest.mark.parametrize("given, name", [
    (np.float32, "float32"), ("f8", "float64"), (np.dtype("int8"), "int8"), (bool, "bool"),
    ("complex64", "complex64"), (np.float16, "float16"),
])
def test_dtype_name_canonicalises(given, name):
    assert D.dtype_name(given) == name
    assert D.dtype_name(given) == name  # the memoised answer too


def test_dtype_name_refuses_with_the_argument_named():
    with pytest.raises(TypeError, match="output dtype 'nonsense' is not a NumPy dtype"):
        D.dtype_name("nonsense", "output dtype")
    with pytest.raises(TypeError, match="dtype datetime64 is not supported; use one of bool"):
        D.dtype_name("datetime64")
    with pytest.raises(TypeError, match="not a NumPy dtype"):
        D.dtype_name([1, 2])
