"""fastjson-compatible JSON: tolerant reading, the plain and standard writing dialects."""

import json

import pytest
from hypothesis import given, strategies as st

from namesrv.codec.fastjson import dumps_plain, dumps_standard, loads


def test_unquoted_integer_keys_become_int_keys():
    data = loads(b'{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"n":{-3 : 4}}')
    assert data == {"brokerAddrs": {0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}, "n": {-3: 4}}


def test_quoted_keys_stay_strings():
    assert loads('{"0":"a"}') == {"0": "a"}


def test_digits_commas_and_colons_inside_strings_are_untouched():
    text = '{"topic":"{1:2},3:4","x":{5:"a,6:b\\"7:c"},"y":["8:9",{10:"}"}]}'
    assert loads(text) == {"topic": "{1:2},3:4", "x": {5: 'a,6:b"7:c'}, "y": ["8:9", {10: "}"}]}


def test_escaped_nul_in_the_text_does_not_collide_with_the_marker():
    assert loads('{"\\u0000":1,"m":{2:"\\u0000x"}}') == {"\x00": 1, "m": {2: "\x00x"}}
    assert loads('{"\\u0000\\u00007":1,7:2}') == {"\x00\x007": 1, 7: 2}


def test_invalid_json_still_raises():
    with pytest.raises(ValueError):
        loads(b'{"a":')
    with pytest.raises(ValueError):
        loads(b'{0:}')
    with pytest.raises(ValueError):
        loads(b"\xff")


def test_plain_writes_bare_int_keys_sorted_and_omits_nulls():
    assert dumps_plain({"b": {1: "x", 0: "y"}, "a": None, "c": [1, None]}) == '{"b":{0:"y",1:"x"},"c":[1,null]}'


def test_plain_keeps_non_ascii_raw():
    assert dumps_plain({"k": "é/"}) == '{"k":"é/"}'


def test_standard_quotes_sorts_numerically_and_escapes_like_browser_compatible():
    text = dumps_standard({"m": {10: "x", 2: "y"}, "s": "é/\U0001F600\x01\n", "big": 2 ** 60})
    assert text == '{"big":"1152921504606846976","m":{"2":"y","10":"x"},"s":"\\u00E9\\/\\uD83D\\uDE00\\u0001\\n"}'
    assert text.isascii()


def test_objects_with_to_json_are_written_as_beans():
    class Bean:
        def to_json(self):
            return {"z": 1, "a": None, "m": 2}
    assert dumps_plain([Bean()]) == '[{"m":2,"z":1}]'


names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | names,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(names, children, max_size=4)
    | st.dictionaries(st.integers(-1000, 1000), children, max_size=4),
    max_leaves=20)


def _without_nulls(value):
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@given(values)
def test_plain_output_reads_back(value):
    assert loads(dumps_plain(value)) == _without_nulls(value)


@given(values)
def test_standard_output_is_valid_json(value):
    def stringify(v):
        if isinstance(v, dict):
            return {str(k): stringify(x) for k, x in v.items() if x is not None}
        if isinstance(v, list):
            return [stringify(x) for x in v]
        return v
    assert json.loads(dumps_standard(value)) == stringify(value)
