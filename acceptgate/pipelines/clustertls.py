"""Credentials of a Dask cluster with mutual TLS: a private CA and one certificate per role, made with
the ``cryptography`` package (``acceptgate dask credentials --out DIR``).

A Dask scheduler or worker started with these files accepts only peers whose certificate this CA
signed, and a client is refused unless it presents one too: the shards carry hidden suites and the
workers return the rows the warehouse keeps, so nobody without a certificate may connect, read or
submit. The CA's private key is never written: more certificates mean a new directory, whose CA
replaces this one on every host.

    DIR/ca.pem                                  the CA certificate every host and client trusts
    DIR/scheduler.pem, DIR/scheduler-key.pem    the scheduler's certificate and key
    DIR/worker.pem, DIR/worker-key.pem          every worker's
    DIR/client.pem, DIR/client-key.pem          acceptgate's, the client that submits the shards

Keys are readable by their owner only (0600); the directory is 0700 and appears whole or not at all.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from acceptgate._util import outputs
from acceptgate._util.errors import InvalidInput

ROLES = ("scheduler", "worker", "client")
CA_FILE = "ca.pem"
DEFAULT_DAYS = 365


@dataclass(frozen=True)
class RoleFiles:
    ca_file: Path
    cert: Path
    key: Path


def role_files(directory: str | os.PathLike, role: str) -> RoleFiles:
    directory = Path(directory)
    return RoleFiles(directory / CA_FILE, directory / f"{role}.pem", directory / f"{role}-key.pem")


def write_credentials(out: str | os.PathLike, *, days: int = DEFAULT_DAYS) -> Path:
    """A new CA and a certificate for each role in ``out`` (a new or empty directory), built beside it
    and renamed into place: an error leaves nothing."""
    out = Path(out)
    if days < 1:
        raise InvalidInput("must be at least 1 day", field="--days")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInput("exists and is not an empty directory: credentials are never overwritten (a new CA "
                           "would lock out every host holding the old one); give a new directory",
                           source=str(out), field="--out")
    outputs.check_dir(out, "--out")
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.absolute().parent))  # 0700
    try:
        ca_key, ca_cert = _ca(days)
        _write(staging / CA_FILE, _pem_cert(ca_cert), 0o644)
        for role in ROLES:
            key, cert = _leaf(role, ca_key, ca_cert, days)
            files = role_files(staging, role)
            _write(files.cert, _pem_cert(cert), 0o644)
            _write(files.key, _pem_key(key), 0o600)
        if out.exists():
            out.rmdir()  # empty, checked above
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "acceptgate"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity(builder, days: int):
    now = dt.datetime.now(dt.timezone.utc)
    return builder.not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))


def _ca(days: int):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    key = _key()
    name = _name("acceptgate dask CA")
    builder = _validity(x509.CertificateBuilder().subject_name(name).issuer_name(name)
                        .public_key(key.public_key()).serial_number(x509.random_serial_number()), days)
    builder = (builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    return key, builder.sign(key, hashes.SHA256())


def _leaf(role: str, ca_key, ca_cert, days: int):
    """A role's certificate: each role both listens and connects in Dask, so both TLS usages."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = _key()
    builder = _validity(x509.CertificateBuilder().subject_name(_name(f"acceptgate dask {role}"))
                        .issuer_name(ca_cert.subject).public_key(key.public_key())
                        .serial_number(x509.random_serial_number()), days)
    builder = (builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
               .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"{role}.dask.acceptgate")]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    return key, builder.sign(ca_key, hashes.SHA256())


def _pem_cert(cert) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _pem_key(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
