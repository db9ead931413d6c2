"""A cluster's own certificate authority and its tasks' certificates (`cryptography`).

Rules: one CA per launched cluster, made in the launcher's process; its
private key never leaves that process's memory (a restarted task gets a new
certificate from it). Each task's certificate names the task's host as its
subject alternative name, an IP address or a DNS name, so a client that
dialled another host refuses it; a loopback task's names every loopback
spelling (localhost, 127.0.0.1, ::1), since its clients use any of them.
Keys are EC P-256: made in a millisecond, where RSA-2048 takes ~50 ms per task.
"""
from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nbcluster.rpc.grpc_transport.tls_material import ServerTls
from nbcluster.rpc.grpc_transport.tokens import is_loopback

VALID_DAYS = 365  # a cluster lives for hours or days; a year outlasts any of them
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def _alt_names(host: str) -> list:
    names = []
    for name in (_LOOPBACK_NAMES if is_loopback(host) else (host.strip("[]"),)):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            names.append(x509.DNSName(name.lower()))
    return names


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class ClusterCA:
    """A fresh self-signed CA for one cluster; `issue(host)` signs a task's certificate.

    Example:
      >>> ca = ClusterCA("demo")
      >>> tls = ca.issue("127.0.0.1")
      >>> tls.ca == ca.cert_pem and b"PRIVATE KEY" in tls.key
      True
    """

    def __init__(self, name: str) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                   f"nbcluster CA {name}"[:64])])
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder().subject_name(self._name).issuer_name(self._name)
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))  # hosts' clocks differ a little
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()),
                           critical=False)
            .sign(self._key, hashes.SHA256()))
        self.cert_pem: bytes = self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, host: str) -> ServerTls:
        """A certificate and key for a task served at `host` (its SAN), and this CA's."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host.strip("[]")[:64])])
        cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(self._name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(_alt_names(host)), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256()))
        return ServerTls(cert=cert.public_bytes(serialization.Encoding.PEM), key=_key_pem(key),
                         ca=self.cert_pem)
