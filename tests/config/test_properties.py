from namesrv.properties import PropertiesError, format_properties, parse_properties

import pytest


def test_java_properties_syntax():
    text = "\n".join([
        "# comment", "! also a comment", "", "a=1", "b : 2", "c 3", "  d=  spaced  ",
        "e=line\\", "   continued", "f=tab\\tnewline\\n", "g=\\u00e9t\\u00E9", "h\\=key=v", "i=", "a=last",
    ])
    assert parse_properties(text) == {
        "a": "last", "b": "2", "c": "3", "d": "spaced  ", "e": "linecontinued", "f": "tab\tnewline\n",
        "g": "été", "h=key": "v", "i": "",
    }


def test_malformed_unicode_escape():
    with pytest.raises(PropertiesError):
        parse_properties("a=\\u12")


def test_format_is_key_equals_value_lines():
    assert format_properties([("a", "1"), ("b", "x y")]) == "a=1\nb=x y\n"
