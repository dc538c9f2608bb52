"""A mosquitto with a TLS listener and a password file, for the MQTT security tests.

Certificates are made here with ``cryptography`` (a dependency of aiortc, so always in the
environment): a test CA, a broker certificate for 127.0.0.1 signed by it, a client
certificate signed by it, and a second CA nobody trusts (its broker certificate is the
"untrusted" case). The password file is written by ``mosquitto_passwd``, from the same
package as the broker.
"""

from __future__ import annotations

import datetime as dt
import getpass
import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.transports.conftest import Broker, free_port

USER = "evaluator"
PASSWORD = "s3cret-pa55"  # the tests look for this string in every output
LOOPBACK = "127.0.0.1"


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    other_server_cert: Path
    other_server_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _write_cert(cert: x509.Certificate, path: Path) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _sign(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: str,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
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
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK))]),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for prefix in ("", "other_"):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = f"streameval test CA {prefix or 'trusted'}"
        files[f"{prefix}ca"] = _write_cert(
            _sign(ca_name, ca_key, ca_name, ca_key, ca=True), folder / f"{prefix}ca.pem"
        )
        server_key = ec.generate_private_key(ec.SECP256R1())
        files[f"{prefix}server_key"] = _write_key(server_key, folder / f"{prefix}server.key")
        files[f"{prefix}server_cert"] = _write_cert(
            _sign(LOOPBACK, server_key, ca_name, ca_key, ca=False),
            folder / f"{prefix}server.pem",
        )
        if not prefix:
            client_key = ec.generate_private_key(ec.SECP256R1())
            files["client_key"] = _write_key(client_key, folder / "client.key")
            files["client_cert"] = _write_cert(
                _sign(USER, client_key, ca_name, ca_key, ca=False), folder / "client.pem"
            )
    return Pki(**files)


def password_file(path: Path, user: str = USER, password: str = PASSWORD) -> Path:
    exe = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    subprocess.run([exe, "-b", "-c", str(path), user, password], check=True, capture_output=True)
    path.chmod(0o600)
    return path


def start_tls_broker(folder: Path, pki: Pki, *, untrusted: bool = False) -> Broker:
    """mosquitto with one TLS listener on a free loopback port, passwords required and a
    client certificate accepted (not required) when it is signed by the test CA."""
    port = free_port()
    cert = pki.other_server_cert if untrusted else pki.server_cert
    key = pki.other_server_key if untrusted else pki.server_key
    passwd = password_file(folder / "passwd")
    conf = folder / ("untrusted.conf" if untrusted else "tls.conf")
    # run as root, mosquitto drops to the "mosquitto" user, which cannot read pytest's
    # private tmp folder: stay the user we are
    conf.write_text(
        f"user {getpass.getuser()}\n"
        "per_listener_settings true\n"
        f"listener {port} {LOOPBACK}\n"
        f"cafile {pki.ca}\ncertfile {cert}\nkeyfile {key}\n"
        "require_certificate false\n"
        "allow_anonymous false\n"
        f"password_file {passwd}\n"
        "persistence false\nmessage_size_limit 0\nmax_queued_messages 4096\n"
    )
    broker = Broker(port, conf)
    broker.start()
    return broker
