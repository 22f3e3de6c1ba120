"""Java .properties reading and writing (java.util.Properties.load semantics)."""

import pytest
from hypothesis import given, strategies as st

from namesrv.config.properties import (
    PropertiesError, escape_value, format_properties, load_properties_file, parse_properties,
)


def test_java_properties_syntax():
    text = "\n".join([
        "# comment", "! also a comment", "", "a=1", "b : 2", "c 3", "  d=  spaced  ",
        "e=line\\", "   continued", "f=tab\\tnewline\\n", "g=\\u00e9t\\u00E9", "h\\=key=v", "i=", "a=last",
    ])
    assert parse_properties(text) == {
        "a": "last", "b": "2", "c": "3", "d": "spaced  ", "e": "linecontinued", "f": "tab\tnewline\n",
        "g": "été", "h=key": "v", "i": "",
    }


@pytest.mark.parametrize("text, expected", [
    ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),        # every Java line terminator
    ("a=x\fy\x0bz\n", {"a": "x\fy\x0bz"}),                          # \f and \v are not line breaks
    ("\f a=1", {"a": "1"}),                                          # \f is leading whitespace
    ("# comment ends with \\\na=1", {"a": "1"}),                     # comments never continue
    ("a=x\\\n# not a comment\n", {"a": "x# not a comment"}),         # a continued line is no comment
    ("a=x\\\n\nb=2", {"a": "x", "b": "2"}),                          # an empty line ends the continuation
    ("a=x\\\\\nb=2", {"a": "x\\", "b": "2"}),                        # an even backslash run does not continue
    ("a=x\\\\\\\n  y", {"a": "x\\y"}),                               # an odd one does
    ("a=x\\", {"a": "x"}),                                           # a trailing backslash at EOF is dropped
    ("a:=b", {"a": "=b"}),                                           # only one separator is consumed
    ("a = = b", {"a": "= b"}),
    ("a\\ b\\:c=d", {"a b:c": "d"}),                                 # escaped separators in keys
    ("key", {"key": ""}),                                            # a key alone
    ("a=\\q\\\"", {"a": "q\""}),                                     # unknown escapes stand for themselves
    ("a=\\ud83d\\ude00", {"a": "\U0001F600"}),                       # a UTF-16 surrogate pair is one char
    ("a=b\\u0020", {"a": "b "}),
])
def test_edge_cases(text, expected):
    assert parse_properties(text) == expected


@pytest.mark.parametrize("bad", ["a=\\u12", "a=\\u12G4", "a=\\u+123", "a=\\u 123", "a=\\u1_23"])
def test_malformed_unicode_escape_is_refused_as_java_does(bad):
    with pytest.raises(PropertiesError, match="uxxxx"):
        parse_properties(bad)


def test_format_is_raw_key_equals_value_lines_for_ordinary_values():
    # byte for byte what Java's MixAll.properties2String writes
    assert format_properties([("a", "1"), ("b", "x y"), ("c", "/home/x:9876#=!"), ("d", "")]) == \
        "a=1\nb=x y\nc=/home/x:9876#=!\nd=\n"


def test_format_escapes_what_would_not_read_back():
    assert escape_value("C:\\dir") == "C:\\\\dir"
    assert escape_value(" lead") == "\\ lead"
    assert escape_value("two\nlines") == "two\\nlines"
    assert escape_value("été") == "\\u00E9t\\u00E9"  # Java reads properties bodies as ISO-8859-1
    assert format_properties([("k=:", "v"), ("#k", "v")]) == "k\\=\\:=v\n\\#k=v\n"


@given(st.dictionaries(st.text(), st.text()))
def test_anything_written_reads_back_unchanged(table):
    assert parse_properties(format_properties(table.items())) == table


def test_file_encodings(tmp_path):
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("\ufeffa=été\n".encode("utf-8"))  # a BOM is not part of the first key
    assert load_properties_file(str(utf8)) == {"a": "été"}
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("a=été\n".encode("latin-1"))  # what a Java tool may have written
    assert load_properties_file(str(latin1)) == {"a": "été"}
