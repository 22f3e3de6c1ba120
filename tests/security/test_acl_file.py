"""Address patterns and the plain_acl.yml credentials file."""

import json

import pytest

from namesrv.security.aclfile import AclFileError, load_acl_file, parse_acl
from namesrv.security.addresses import AddressMatcher, peer_host

# distribution/conf/plain_acl.yml of rocketmq-all-4.9.8, as shipped.
JAVA_SAMPLE = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
"""


@pytest.mark.parametrize("pattern,host,expected", [
    ("*", "8.8.8.8", True),
    ("192.168.0.7", "192.168.0.7", True),
    ("192.168.0.7", "192.168.0.8", False),
    ("192.168.0.*", "192.168.0.255", True),
    ("192.168.0.*", "192.168.1.1", False),
    ("192.168.*.*", "192.168.77.1", True),
    ("192.168.1.1-200", "192.168.1.200", True),
    ("192.168.1.1-200", "192.168.1.201", False),
    ("192.168.1.{1,2,3}", "192.168.1.2", True),
    ("192.168.1.{1,2,3}", "192.168.1.4", False),
    ("10.0.0.0/8", "10.200.3.4", True),
    ("10.0.0.0/8", "11.0.0.1", False),
    ("::1", "::1", True),
    ("fd00::/8", "fd12::5", True),
    ("127.0.0.1", "::ffff:127.0.0.1", True),
    ("", "127.0.0.1", False),
])
def test_address_patterns(pattern, host, expected):
    assert AddressMatcher.parse(pattern).matches(host) is expected


def test_address_lists_and_braces():
    matcher = AddressMatcher.parse("10.1.1.{1,2}, 172.16.0.0/12,127.0.0.1")
    assert [matcher.matches(h) for h in ("10.1.1.2", "172.20.1.1", "127.0.0.1", "10.1.1.3")] == [True] * 3 + [False]
    assert not AddressMatcher.parse("")
    assert not AddressMatcher.parse("").matches("127.0.0.1")


@pytest.mark.parametrize("bad", ["300.1.1.1", "1.2.3", "1.2.3.4-2", "abc", "fe80::*", "10.0.0.0/40"])
def test_bad_patterns_are_errors_at_parse_time(bad):
    with pytest.raises(ValueError):
        AddressMatcher.parse(bad)


def test_peer_host():
    assert peer_host("10.0.0.1:5555") == "10.0.0.1"
    assert peer_host("::1:5555") == "::1"


def test_the_java_sample_file_reads_as_java_reads_it():
    table = parse_acl(JAVA_SAMPLE)
    assert set(table.accounts) == {"RocketMQ", "rocketmq2"}
    plain, admin = table.account("RocketMQ"), table.account("rocketmq2")
    assert plain.secret_key == "12345678" and not plain.admin and not plain.white_addresses
    assert admin.admin and admin.white_addresses.matches("192.168.1.9")
    assert table.global_white_addresses.matches("10.10.103.4")
    assert not table.global_white_addresses.matches("10.10.104.4")


def test_scalars_stay_strings():
    table = parse_acl("accounts:\n  - accessKey: 01234567\n    secretKey: 00012345\n    admin: yes\n")
    account = table.account("01234567")
    assert account.secret_key == "00012345" and account.admin


def test_secret_key_is_not_in_repr():
    assert "12345678" not in repr(parse_acl(JAVA_SAMPLE).account("rocketmq2"))


def test_json_file_works_without_yaml(tmp_path):
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"accounts": [{"accessKey": "adminKey1", "secretKey": "adminSecret1", "admin": True}]}))
    assert load_acl_file(str(path)).account("adminKey1").admin


@pytest.mark.parametrize("text,message", [
    ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "longer than 6"),
    ("accounts:\n  - accessKey: longenough\n    secretKey: 123\n", "longer than 6"),
    ("accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n"
     "  - accessKey: longenough\n    secretKey: 87654321\n", "more than once"),
    ("globalWhiteRemoteAddresses:\n  - 10.0.0.999\n", "globalWhiteRemoteAddresses"),
    ("accounts: 3\n", "must be a list"),
    ("- just\n- a list\n", "expected a mapping"),
    ("accounts: [\n", "not valid YAML"),
])
def test_bad_files_are_refused_without_leaking_secrets(text, message):
    with pytest.raises(AclFileError) as e:
        parse_acl(text, "plain_acl.yml")
    assert message in str(e.value)
    assert "87654321" not in str(e.value) and "12345678" not in str(e.value)


def test_missing_file_is_an_error(tmp_path):
    with pytest.raises(AclFileError, match="cannot read"):
        load_acl_file(str(tmp_path / "nope.yml"))


def test_empty_file_has_no_accounts():
    assert parse_acl("").accounts == {}
