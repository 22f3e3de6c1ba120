"""Test-time TLS material: self-signed pairs written as PEM files (nothing is committed)."""

from cryptography.hazmat.primitives import serialization
from twisted.internet import ssl

from namesrv.security.certs import self_signed_pair


def write_pair(directory, name="server", common_name="localhost", password=None):
    leaf, _, key = self_signed_pair(common_name)
    cert_path = directory / (name + ".crt")
    key_path = directory / (name + ".key")
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
    return str(cert_path), str(key_path), leaf


# -- integration: real sockets on 127.0.0.1 ---------------------------------------
def client_options(leaf):
    trust = ssl.Certificate.loadPEM(leaf.public_bytes(serialization.Encoding.PEM))
    return ssl.optionsForClientTLS("localhost", trustRoot=trust)
