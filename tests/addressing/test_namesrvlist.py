"""The configured list and subgroups: Java's namesrvAddr format, or a refusal naming the key and the entry."""

import pytest

from namesrv.addressing.namesrvlist import java_list, parse_namesrv_addr, parse_subgroups


def test_a_java_namesrv_addr_is_read_in_order_without_duplicates():
    assert parse_namesrv_addr(" 10.0.0.1:9876; ns2.example:9877;;10.0.0.1:9876 ;") == (
        "10.0.0.1:9876", "ns2.example:9877")
    assert java_list(parse_namesrv_addr("a:1;b:2")) == "a:1;b:2"
    assert parse_namesrv_addr("") == ()


@pytest.mark.parametrize("entry", ["10.0.0.1", "10.0.0.1:", ":9876", "10.0.0.1:0", "10.0.0.1:65536",
                                   "10.0.0.1:98x6", "[::1]:9876", "a b:9876", "host/x:9876", "-a:1"])
def test_a_bad_entry_refuses_naming_the_key_and_the_entry(entry):
    with pytest.raises(ValueError) as e:
        parse_namesrv_addr("10.0.0.2:9876;" + entry)
    assert "addressServiceNamesrvAddr" in str(e.value) and repr(entry.strip()) in str(e.value)


def test_subgroups_are_split_on_semicolons_or_commas():
    assert parse_subgroups("nsaddr; nsaddr-unit1,other.grp_2") == ("nsaddr", "nsaddr-unit1", "other.grp_2")


@pytest.mark.parametrize("text", ["", ";", "a/b", "ns addr", "x" * 129, "-lead"])
def test_a_bad_or_empty_subgroup_list_refuses(text):
    with pytest.raises(ValueError, match="addressServiceSubgroups"):
        parse_subgroups(text)
