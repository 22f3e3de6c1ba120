"""The server's TLS material: PEM certificate chain and key from files (reloadable), or a test-mode one.

Java (``TlsHelper.buildSslContext``) reads ``tls.server.certPath`` (PEM chain),
``tls.server.keyPath`` (PKCS#8 PEM, optionally encrypted with ``tls.server.keyPassword``; we
read that password from a file, ``tlsServerKeyPasswordFile``, so it never sits among the
properties GET_NAMESRV_CONFIG returns),
and, for client certificates, ``tls.server.needClientAuth`` (none | optional | require)
with ``tls.server.trustCertPath``. In test mode it serves a self-signed certificate made
at start. Differences: a client certificate, when asked for, is always verified against
the trust file (Java's ``tls.server.authClient=false`` accepts any certificate, which
proves nothing); the key and certificate must match or the pair is refused (Java finds out
at the first handshake).

Needs pyOpenSSL and cryptography (``twisted[tls]``), imported only when TLS is on.
"""

import datetime

from twisted.logger import Logger

log = Logger()

CLIENT_AUTH_MODES = ("none", "optional", "require")


class TlsConfigError(ValueError):
    """The TLS settings or files cannot be used; the message names the file, never key material."""


def _read(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TlsConfigError("cannot read the TLS %s %s: %s" % (what, path, e.strerror or e))


def _public_bytes(key):
    from cryptography.hazmat.primitives import serialization
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_pem_pair(cert_path, key_path, key_password=None):
    """(leaf, chain, key) as cryptography objects; refuses a key that does not belong to the leaf."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        certificates = x509.load_pem_x509_certificates(_read(cert_path, "certificate"))
    except ValueError as e:
        raise TlsConfigError("%s holds no PEM certificate: %s" % (cert_path, e))
    try:
        key = serialization.load_pem_private_key(
            _read(key_path, "private key"), password=key_password.encode("utf-8") if key_password else None)
    except (ValueError, TypeError) as e:
        raise TlsConfigError("cannot load the private key %s (wrong format or password?): %s"
                             % (key_path, type(e).__name__))
    leaf = certificates[0]
    if _public_bytes(leaf.public_key()) != _public_bytes(key.public_key()):
        raise TlsConfigError("the private key %s does not belong to the certificate %s" % (key_path, cert_path))
    return leaf, certificates[1:], key


def self_signed_pair(common_name="localhost", days=365):
    """Java's test mode: an in-memory self-signed RSA certificate (clients in test mode trust any)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    leaf = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
            .sign(key, hashes.SHA256()))
    return leaf, [], key


def certificate_options(leaf, chain, key, client_auth="none", trust_path=None):
    """A Twisted ``CertificateOptions`` (an IOpenSSLServerConnectionCreator) for one pair."""
    from cryptography import x509
    from OpenSSL import crypto
    from twisted.internet import ssl

    if client_auth not in CLIENT_AUTH_MODES:
        raise TlsConfigError("tlsServerNeedClientAuth=%r: expected one of %s" % (client_auth, ", ".join(CLIENT_AUTH_MODES)))
    kwargs = {}
    if client_auth != "none":
        if not trust_path:
            raise TlsConfigError("tlsServerNeedClientAuth=%s needs tlsServerTrustCertPath (the CA that signs "
                                 "client certificates)" % client_auth)
        try:
            trusted = x509.load_pem_x509_certificates(_read(trust_path, "trust certificate"))
        except ValueError as e:
            raise TlsConfigError("%s holds no PEM certificate: %s" % (trust_path, e))
        kwargs = dict(verify=True, requireCertificate=client_auth == "require",
                      caCerts=[crypto.X509.from_cryptography(c) for c in trusted])
    return ssl.CertificateOptions(
        privateKey=crypto.PKey.from_cryptography_key(key),
        certificate=crypto.X509.from_cryptography(leaf),
        extraCertChain=[crypto.X509.from_cryptography(c) for c in chain] or None,
        **kwargs)


class ServerTlsMaterial:
    """The current ``CertificateOptions``; ``reload()`` swaps it only when the new files load cleanly."""

    def __init__(self, cert_path="", key_path="", key_password="", trust_path="", client_auth="none",
                 test_mode=False, key_password_path=""):
        self.cert_path = cert_path
        self.key_path = key_path
        self.key_password = key_password
        self.key_password_path = key_password_path
        self.trust_path = trust_path
        self.client_auth = (client_auth or "none").strip().lower()
        self.test_mode = test_mode
        self.options = None
        self.generation = 0
        self.reloads = 0
        self.reload_failures = 0

    @property
    def watched_paths(self):
        return [p for p in (self.cert_path, self.key_path, self.trust_path, self.key_password_path) if p]

    def _password(self):
        if not self.key_password_path:
            return self.key_password
        lines = _read(self.key_password_path, "key password file").decode("utf-8").splitlines()
        return lines[0].strip() if lines else ""

    def _build(self):
        if self.cert_path and self.key_path:
            leaf, chain, key = load_pem_pair(self.cert_path, self.key_path, self._password())
        elif self.cert_path or self.key_path:
            raise TlsConfigError("set both tlsServerCertPath and tlsServerKeyPath (only one is set)")
        elif self.test_mode:
            log.warn("TLS test mode: serving a self-signed certificate made at start (tlsTestModeEnable=true)")
            leaf, chain, key = self_signed_pair()
        else:
            raise TlsConfigError("TLS is on (tlsMode) but tlsServerCertPath and tlsServerKeyPath are not set "
                                 "(set them, or tlsTestModeEnable=true for a self-signed test certificate)")
        options = certificate_options(leaf, chain, key, self.client_auth, self.trust_path)
        options.getContext()  # fail now, not at the first handshake
        return options

    def load(self):
        self.options = self._build()
        self.generation += 1
        return self.options

    def reload(self, changed=None):
        """Called by the file watcher. Java waits for both the certificate and the key to change; we
        try on any change and keep the old pair when the new one does not load (e.g. only half replaced)."""
        try:
            options = self._build()
        except TlsConfigError as e:
            self.reload_failures += 1
            log.warn("TLS files changed but cannot be used yet, keeping the previous certificate: {error}",
                     error=str(e))
            return False
        self.options = options
        self.generation += 1
        self.reloads += 1
        log.info("TLS certificate reloaded from {path}", path=self.cert_path)
        return True
