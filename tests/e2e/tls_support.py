"""A certificate authority of a test's own, and a loopback HTTPS server it vouches for.

For the code under test that fetches over HTTPS (client metadata documents):
the CA's certificate goes into ``SSL_CERT_FILE``, which the fetch's TLS
context reads, and :func:`serve_https` serves an ASGI app at
``https://127.0.0.1:<port>`` with a certificate that CA signed.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.loopback import serve_loopback

__all__ = ["TestCA", "make_ca", "serve_https"]


@attrs.frozen
class TestCA:
    """Files of a CA and of a server certificate for 127.0.0.1 it signed."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(directory: Path) -> TestCA:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("agentws test CA"))
        .issuer_name(_name("agentws test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    found = TestCA(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    found.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    found.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    found.key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return found


@asynccontextmanager
async def serve_https(app: Any, ca: TestCA) -> AsyncIterator[str]:
    """Serve ``app`` at ``https://127.0.0.1:<port>`` until the block ends; yield that base URL."""
    async with serve_loopback(app, tls=(ca.cert_file, ca.key_file)) as base_url:
        yield base_url
